#pragma once
// A job's parallel layout as one phrase, the same in every place that names one: the diff
// report's header, `ttrace localize`'s relaunch line and the explorer's agent status all say
// "TP2 x DP2, 4 ranks". Kept at the floor of the stages (it needs only the sizes), so the
// report, the replay client and the front ends can all use it.
#include <map>
#include <string>

namespace ttrace {

// "TP2 x DP2, 4 ranks": the sizes above 1 in the order users name layouts (Megatron's
// TP x CP x PP x DP, experts last: tp, cp, pp, vpp, dp, ep), then any other dimension by name;
// "4 ranks" when no size is above 1 (or none is recorded) on several ranks; "single process"
// on one.
std::string parallelLayoutText(const std::map<std::string, int>& parallel, int worldSize);

// "1 rank", "4 ranks".
std::string ranksText(int ranks);

} // namespace ttrace
