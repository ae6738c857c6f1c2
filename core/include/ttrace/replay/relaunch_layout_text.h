#pragma once
// How a relaunch's layout reads next to the captured one, for `ttrace localize` and the
// explorer alike: a relaunch may drop data parallelism (docs/localize.md, "Fewer devices than
// the job"), and then replays that need the data-parallel group are refused.
#include "ttrace/replay/agent_info.h"

#include <map>
#include <string>

namespace ttrace::replay {

// "TP2×DP2" (dimensions in the order tp, pp, dp, cp, ep, vpp, then any other; sizes of 1
// left out), "1 device" when every size is 1.
std::string layoutName(const std::map<std::string, int>& parallel);

// "relaunched TP2 on 2 ranks of the captured TP2×DP2 on 4: each rank replays 2 captured ranks
// in turn", "TP2 on 2 ranks, as captured", or empty when the agent does not say (a live job,
// an older agent).
std::string relaunchLayoutLine(const AgentInfo& info);

// Whether the relaunch is smaller than the captured job.
bool relaunchIsSmaller(const AgentInfo& info);

} // namespace ttrace::replay
