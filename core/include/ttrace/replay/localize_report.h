#pragma once
// The localize report as JSON (`ttrace localize --json`, schema in docs/localize-json.md) and
// as Markdown for a bug report.
#include "ttrace/replay/localize_result.h"

#include <string>
#include <string_view>

namespace ttrace::replay {

inline constexpr std::string_view kLocalizeJsonSchema = "ttrace-localize";
inline constexpr int kLocalizeJsonVersion = 1;

// Where the result came from, written into both reports.
struct LocalizeContext {
    std::string reference, candidate; // bundle directories as given
    std::string endpoint;             // the agent's ZeroMQ endpoint
    std::string agent;                // its "hello" name, e.g. "ttrace 0.1.0"
    int worldSize = 0;
};

[[nodiscard]] std::string localizeResultToJson(const LocalizeResult& result,
                                               const LocalizeContext& context);
[[nodiscard]] std::string localizeResultToMarkdown(const LocalizeResult& result,
                                                   const LocalizeContext& context);

// One line naming what holds the bug, e.g. "introduced in: embedding" or
// "introduced in gradient reduction: parameters of embedding, layers.0.mlp" or "nothing
// introduced".
[[nodiscard]] std::string localizeConclusion(const LocalizeResult& result);

} // namespace ttrace::replay
