#include "ttrace/replay/relaunch_layout_text.h"

#include "ttrace/io/parallel_layout_text.h"

namespace ttrace::replay {
namespace {

std::string layoutOf(const JobLayout& layout) {
    return parallelLayoutText(layout.parallel, layout.worldSize);
}

} // namespace

bool relaunchIsSmaller(const AgentInfo& info) {
    return info.relaunchedLayout.worldSize > 0 &&
           info.relaunchedLayout.worldSize < info.capturedLayout.worldSize;
}

std::string relaunchLayoutLine(const AgentInfo& info) {
    if (info.relaunchedLayout.worldSize == 0) {
        return {};
    }
    if (!relaunchIsSmaller(info)) {
        return layoutOf(info.relaunchedLayout) + ", as captured";
    }
    return "relaunched " + layoutOf(info.relaunchedLayout) + ", of the captured " +
           layoutOf(info.capturedLayout) + ": each rank replays " +
           std::to_string(info.ranksPerRank) +
           " captured ranks in turn; replays that need the data-parallel group are refused";
}

} // namespace ttrace::replay
