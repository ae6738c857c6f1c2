#pragma once
// The machine-readable diff report (`ttrace diff --json`), schema in docs/diff-json.md. The
// same document is the summary cache's storage format, so it round-trips every field.
#include "ttrace/compare/diff_result.h"

#include <optional>
#include <string>
#include <string_view>

namespace ttrace {

inline constexpr std::string_view kDiffJsonSchema = "ttrace-diff";
inline constexpr int kDiffJsonVersion = 1;

[[nodiscard]] std::string diffResultToJson(const DiffResult& result, bool pretty = true);

// Parses a document written by diffResultToJson; on failure returns nothing and says why.
std::optional<DiffResult> diffResultFromJson(std::string_view text, std::string& error);

} // namespace ttrace
