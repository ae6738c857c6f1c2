#pragma once
// One tensor's result as the report JSON holds it (docs/diff-json.md), for the encodings that
// carry results between processes. Private to core (keeps nlohmann/json out of public headers).
#include "ttrace/compare/diff_result.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ttrace {

nlohmann::json tensorResultJson(const TensorResult& tensor);
// Throws on a malformed document.
TensorResult tensorResultFromJson(const nlohmann::json& j);

// Whether `doc` says it is a ttrace-diff document of the version this build reads.
bool isDiffDocument(const nlohmann::json& doc);
// The result a parsed ttrace-diff document holds; on failure nothing, and why (a field missing,
// of the wrong type, or an index past the tensors). Never throws.
std::optional<DiffResult> diffResultFromDocument(const nlohmann::json& doc, std::string& error);

} // namespace ttrace
