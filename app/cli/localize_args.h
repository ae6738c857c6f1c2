#pragma once
// Command line of `ttrace localize`.
#include "ttrace/compare/tolerance.h"
#include "ttrace/replay/localize_result.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace::cli {

struct LocalizeArgs {
    std::vector<std::string> bundles; // reference, candidate
    std::string agent;                // HOST:PORT
    std::string tokenFile;
    std::vector<std::string> modules; // judge only these (no diff)
    std::optional<std::int64_t> iteration;
    std::int64_t microBatch = 0;                                  // for named modules
    replay::LocalizePhase phase = replay::LocalizePhase::Forward; // for named modules
    std::string json, markdown;
    ToleranceSettings tolerance;
    double timeoutSeconds = 300.0;
    bool useCache = true;
    bool shutdown = false; // ask the agent to exit afterwards
};

extern const char* const kLocalizeUsage;

// Returns an error message, or empty on success.
std::string parseLocalizeArgs(std::span<const std::string_view> args, LocalizeArgs& out);

} // namespace ttrace::cli
