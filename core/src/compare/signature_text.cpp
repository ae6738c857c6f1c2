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
    auto near = [factor](double k) { return std::abs(factor / k - 1.0) < 0.01; };
    for (const auto& [name, size] : parallel) {
        if (size <= 1) {
            continue;
        }
        if (near(size)) {
            return " (= " + name + ")";
        }
        if (near(1.0 / size)) {
            return " (= 1/" + name + ")";
        }
    }
    return {};
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
