#include "ttrace/replay/replay_request.h"

#include "ttrace/io/name_table.h"

namespace ttrace::replay {
namespace {

// The phase names of the replay request (docs/protocol.md, "replay").
constexpr NameTable kReplayPhaseNames{ReplayPhase::Step,
                                      std::array<std::pair<ReplayPhase, std::string_view>, 3>{{
                                          {ReplayPhase::Forward, "forward"},
                                          {ReplayPhase::Backward, "backward"},
                                          {ReplayPhase::Step, "step"},
                                      }}};

} // namespace

std::string_view replayPhaseName(ReplayPhase phase) {
    return kReplayPhaseNames.name(phase);
}

std::optional<ReplayPhase> parseReplayPhase(std::string_view name) {
    return kReplayPhaseNames.parse(name);
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
