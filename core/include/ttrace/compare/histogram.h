#pragma once
// Histogram of element errors |cand - ref| in units of the tensor's tolerance, on log-spaced
// bins, so "how many elements exceed the tolerance and by how much" is visible at a glance.
#include <cstdint>
#include <vector>

namespace ttrace {

struct ErrorHistogram {
    // Bin i covers [edges[i], edges[i+1]) in tolerance units; edges are powers of ten from
    // 1e-6 to 1e6. Elements with zero error are counted in `exactZero`, above the last edge in
    // the last bin.
    std::vector<double> edges;
    std::vector<std::int64_t> counts;
    std::int64_t exactZero = 0;
    std::int64_t nonFinite = 0; // NaN/Inf errors
};

} // namespace ttrace
