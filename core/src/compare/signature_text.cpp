#include "compare/signature_text.h"

#include <cmath>
#include <cstdio>

namespace ttrace {

std::string formatFactor(double value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", value);
    return buf;
}

std::string nameFactor(double factor, const ParallelSizes& parallel) {
    // Every name that fits: with tp = micro_batches = 2 an x2 cannot say which it is.
    auto near = [factor](double k) { return std::abs(factor / k - 1.0) < 0.01; };
    std::string names;
    for (const auto& [name, size] : parallel) {
        if (size <= 1) {
            continue;
        }
        const double n = size;
        const std::string fit = near(n)                    ? name
                                : near(1.0 / n)            ? "1/" + name
                                : near(std::sqrt(n))       ? "sqrt(" + name + ")"
                                : near(1.0 / std::sqrt(n)) ? "1/sqrt(" + name + ")"
                                                           : "";
        if (!fit.empty()) {
            names += " = " + fit;
        }
    }
    return names.empty() ? std::string() : " (" + names.substr(1) + ")";
}

std::string rankList(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    }
    return out;
}

std::string indexList(const std::vector<std::int64_t>& indices) {
    std::string out = "[";
    for (std::size_t i = 0; i < indices.size() && i < 16; ++i) {
        out += (i ? ", " : "") + std::to_string(indices[i]);
    }
    return out + (indices.size() > 16 ? ", ...]" : "]");
}

} // namespace ttrace
