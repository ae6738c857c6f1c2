#include "ttrace/run_layout.h"

#include <array>
#include <string_view>

namespace ttrace {
namespace {

std::string ranksText(int ranks) {
    return std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
}

} // namespace

std::string layoutText(const Manifest& manifest) {
    // The order users name layouts in (Megatron's TP x CP x PP x DP, experts last).
    static constexpr std::array<std::string_view, 6> kOrder = {"tp", "cp", "pp", "vpp", "dp", "ep"};
    std::string sizes;
    for (const auto name : kOrder) {
        const auto it = manifest.parallel.find(std::string(name));
        if (it == manifest.parallel.end() || it->second <= 1) {
            continue;
        }
        std::string upper(name);
        for (auto& c : upper) {
            c = static_cast<char>(c - 'a' + 'A');
        }
        sizes += (sizes.empty() ? "" : " x ") + upper + std::to_string(it->second);
    }
    const auto ranks = ranksText(manifest.worldSize);
    if (sizes.empty()) {
        return manifest.worldSize <= 1 ? "single process" : ranks;
    }
    return sizes + ", " + ranks;
}

std::string sideLayoutText(const DiffSummary& summary, bool reference) {
    const auto& layout = reference ? summary.referenceLayout : summary.candidateLayout;
    // A report of an older build has no layout: its rank count says what it can.
    std::string text = layout.empty()
                           ? ranksText(reference ? summary.referenceRanks : summary.candidateRanks)
                           : layout;
    if (reference && summary.referenceRole == "candidate") {
        text += ", captured as a candidate: analytic bound only";
    }
    return text;
}

} // namespace ttrace
