#pragma once
// What one `replay` request asks the agent to re-run (docs/protocol.md, "replay").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace::replay {

enum class ReplayPhase { Forward, Backward, Step };
std::string_view replayPhaseName(ReplayPhase phase);
std::optional<ReplayPhase> parseReplayPhase(std::string_view name);

struct ReplayRequest {
    std::string module; // canonical name; for Step, "" means every parameter
    std::int64_t iteration = 0;
    std::int64_t microBatch = 0; // ignored for Step
    ReplayPhase phase = ReplayPhase::Forward;
    // Reference variants whose inputs to feed: "nominal" plus the perturbed ones that measure
    // this module's own round-off floor (docs/tolerance.md, "Localize").
    std::vector<std::string> variants{"nominal"};

    [[nodiscard]] std::string describe() const; // e.g. "forward of layers.0 (iteration 0, mb 1)"
};

} // namespace ttrace::replay
