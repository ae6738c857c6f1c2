#pragma once
// One tensor's result as the report JSON holds it (docs/diff-json.md), for the encodings that
// carry results between processes. Private to core (keeps nlohmann/json out of public headers).
#include "ttrace/diff_result.h"

#include <nlohmann/json.hpp>

namespace ttrace {

nlohmann::json tensorResultJson(const TensorResult& tensor);
// Throws on a malformed document.
TensorResult tensorResultFromJson(const nlohmann::json& j);

} // namespace ttrace
