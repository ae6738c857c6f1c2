#pragma once
// Double-precision accumulators of one reference/candidate comparison. Private to core: the
// parallel reduction (oneTBB) lives in metric_sums.cpp so no public header sees TBB.
#include <cstddef>
#include <cstdint>

namespace ttrace {

struct MetricSums {
    // Elements per block of `parallel`: large enough that Eigen's vectorized loops dominate the
    // task overhead, small enough that a 1M-element tensor still splits across all cores.
    static constexpr std::size_t kParallelBlock = std::size_t{1} << 14;

    double sumSqDiff = 0.0; // sum (c - r)^2 over elements finite on both sides
    double sumSqRef = 0.0;
    double sumSqCand = 0.0;
    double dot = 0.0;
    double maxAbs = 0.0;
    std::int64_t elements = 0;
    std::int64_t refNaN = 0, refInf = 0, candNaN = 0, candInf = 0;
    std::int64_t nonFiniteMismatch = 0;

    // Adds `count` consecutive elements (Eigen block math, scalar fallback for non-finite).
    void addRun(const double* ref, const double* cand, std::int64_t count);
    void merge(const MetricSums& other);

    // The whole comparison as one tbb::parallel_reduce over blocks.
    static MetricSums parallel(const double* ref, const double* cand, std::size_t count);
};

} // namespace ttrace
