#include "ttrace/replay/relaunch_layout_text.h"

#include <array>
#include <string_view>

namespace ttrace::replay {
namespace {

constexpr std::array<std::string_view, 6> kOrder{"tp", "pp", "dp", "cp", "ep", "vpp"};

std::string part(const std::string& name, int size) {
    std::string upper = name;
    for (auto& c : upper) {
        c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    }
    return upper + std::to_string(size);
}

} // namespace

std::string layoutName(const std::map<std::string, int>& parallel) {
    std::string out;
    const auto add = [&out](const std::string& name, int size) {
        if (size > 1) {
            out += (out.empty() ? "" : "×") + part(name, size);
        }
    };
    for (const auto name : kOrder) {
        if (const auto it = parallel.find(std::string(name)); it != parallel.end()) {
            add(it->first, it->second);
        }
    }
    for (const auto& [name, size] : parallel) {
        bool known = false;
        for (const auto k : kOrder) {
            known = known || name == k;
        }
        if (!known) {
            add(name, size);
        }
    }
    return out.empty() ? "1 device" : out;
}

bool relaunchIsSmaller(const AgentInfo& info) {
    return info.relaunchedLayout.worldSize > 0 &&
           info.relaunchedLayout.worldSize < info.capturedLayout.worldSize;
}

std::string relaunchLayoutLine(const AgentInfo& info) {
    const auto& mine = info.relaunchedLayout;
    const auto& captured = info.capturedLayout;
    if (mine.worldSize == 0) {
        return {};
    }
    const auto ranks = [](int n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); };
    if (!relaunchIsSmaller(info)) {
        return layoutName(mine.parallel) + " on " + ranks(mine.worldSize) + ", as captured";
    }
    return "relaunched " + layoutName(mine.parallel) + " on " + ranks(mine.worldSize) +
           " of the captured " + layoutName(captured.parallel) + " on " +
           std::to_string(captured.worldSize) + ": each rank replays " +
           std::to_string(info.ranksPerRank) +
           " captured ranks in turn; replays that need the data-parallel group are refused";
}

} // namespace ttrace::replay
