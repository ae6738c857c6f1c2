#pragma once
// How a relaunch's layout reads next to the captured one, for `ttrace localize` and the
// explorer alike: a relaunch may drop data parallelism (docs/localize.md, "Fewer devices than
// the job"), and then replays that need the data-parallel group are refused.
#include "ttrace/replay/agent_info.h"

#include <string>

namespace ttrace::replay {

// "relaunched TP2, 2 ranks, of the captured TP2 x DP2, 4 ranks: each rank replays 2 captured
// ranks in turn; ...", "TP2, 2 ranks, as captured", or empty when the agent does not say (a
// live job, an older agent). Layouts are worded as the diff report words them
// (parallel_layout_text.h).
std::string relaunchLayoutLine(const AgentInfo& info);

// Whether the relaunch is smaller than the captured job.
bool relaunchIsSmaller(const AgentInfo& info);

} // namespace ttrace::replay
