#pragma once
// Comparison metrics of one candidate tensor against its reference, accumulated in double.
#include "ttrace/compare/histogram.h"
#include "ttrace/merge/merge.h"

#include <cstdint>
#include <vector>

namespace ttrace {

struct ShardError {
    int rank = 0;
    std::int64_t elements = 0;
    double relError = 0.0; // ||cand - ref||_F / ||ref||_F over the elements this shard covers
};

struct TensorMetrics {
    double relError = 0.0; // ||cand - ref||_F / ||ref||_F (abs error when ||ref|| == 0)
    double maxAbsError = 0.0;
    double cosine = 1.0;
    double refNorm = 0.0;
    double candNorm = 0.0;
    std::int64_t elements = 0;
    std::int64_t candNaN = 0, candInf = 0, refNaN = 0, refInf = 0;
    // Elements where exactly one side is NaN/Inf, or both are but differ (NaN vs Inf, +Inf vs
    // -Inf). Any such element makes relError infinite: a non-finite value that the reference
    // does not have is never round-off.
    std::int64_t nonFiniteMismatch = 0;
    std::vector<ShardError> shards; // per rank piece of the candidate
};

// Computes the metrics in one parallel pass (Eigen + oneTBB). Shapes must match.
TensorMetrics computeMetrics(const FullTensor& reference, const FullTensor& candidate);

// Relative Frobenius error ||a - b|| / ||b|| alone (abs error when ||b|| == 0), in parallel;
// infinite when the non-finite elements differ. Used for the perturbed-reference noise floor.
double relativeError(const std::vector<double>& a, const std::vector<double>& b);

// Element errors in units of `tolerance` (relative to ||ref||_F / sqrt(n), i.e. per-element
// tolerance = tolerance * rms(ref)).
ErrorHistogram computeErrorHistogram(const FullTensor& reference, const FullTensor& candidate,
                                     double tolerance);

} // namespace ttrace
