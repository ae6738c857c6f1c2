#include "ttrace/replay/replay_request.h"

namespace ttrace::replay {

std::string_view replayPhaseName(ReplayPhase phase) {
    switch (phase) {
    case ReplayPhase::Forward: return "forward";
    case ReplayPhase::Backward: return "backward";
    case ReplayPhase::Step: return "step";
    }
    return "forward";
}

std::optional<ReplayPhase> parseReplayPhase(std::string_view name) {
    for (const auto p : {ReplayPhase::Forward, ReplayPhase::Backward, ReplayPhase::Step}) {
        if (replayPhaseName(p) == name) {
            return p;
        }
    }
    return std::nullopt;
}

std::string ReplayRequest::describe() const {
    std::string text = std::string(replayPhaseName(phase)) + " of " +
                       (module.empty() ? std::string("every parameter") : module) + " (iteration " +
                       std::to_string(iteration);
    if (phase != ReplayPhase::Step) {
        text += ", micro-batch " + std::to_string(microBatch);
    }
    return text + ")";
}

} // namespace ttrace::replay
