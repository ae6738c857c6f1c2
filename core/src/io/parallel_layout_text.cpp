#include "ttrace/io/parallel_layout_text.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace ttrace {
namespace {

// The order users name layouts in (Megatron's TP x CP x PP x DP, experts last).
constexpr std::array<std::string_view, 6> kOrder = {"tp", "cp", "pp", "vpp", "dp", "ep"};

std::string sizeText(const std::string& name, int size) {
    std::string upper = name;
    for (auto& c : upper) {
        c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    }
    return upper + std::to_string(size);
}

bool known(const std::string& name) {
    return std::find(kOrder.begin(), kOrder.end(), name) != kOrder.end();
}

} // namespace

std::string ranksText(int ranks) {
    return std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
}

std::string parallelLayoutText(const std::map<std::string, int>& parallel, int worldSize) {
    std::string sizes;
    const auto add = [&sizes](const std::string& name, int size) {
        if (size > 1) {
            sizes += (sizes.empty() ? "" : " x ") + sizeText(name, size);
        }
    };
    for (const auto name : kOrder) {
        if (const auto it = parallel.find(std::string(name)); it != parallel.end()) {
            add(it->first, it->second);
        }
    }
    // A dimension this build does not know still belongs to the layout: never dropped.
    for (const auto& [name, size] : parallel) {
        if (!known(name)) {
            add(name, size);
        }
    }
    if (sizes.empty()) {
        return worldSize <= 1 ? "single process" : ranksText(worldSize);
    }
    return sizes + ", " + ranksText(worldSize);
}

} // namespace ttrace
