#include "ttrace/compare/metrics.h"

#include "compare/metrics_from_sums.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ttrace {
namespace {

// Per-rank error: for copy and replica shards the shard's *own* values are compared, so a
// replica that disagrees shows its own error; a partial sum has no meaning on its own, so
// for sum shards the merged candidate over the elements the shard covers is compared.
ShardError shardError(const DecodedShard& shard, const std::vector<double>& ref,
                      const std::vector<double>& merged) {
    MetricSums sums;
    const bool own = shard.placement.combine != Combine::Sum;
    forEachRun(shard.placement, shard.localShape,
               [&](std::int64_t local, std::int64_t global, std::int64_t count) {
                   const double* c = own ? shard.values.data() + local : merged.data() + global;
                   sums.addRun(ref.data() + global, c, count);
               });
    return shardErrorFromSums(shard.rank, sums);
}

} // namespace

double relFromSums(const MetricSums& s) {
    if (s.nonFiniteMismatch > 0) {
        return std::numeric_limits<double>::infinity();
    }
    const double diff = std::sqrt(s.sumSqDiff);
    const double ref = std::sqrt(s.sumSqRef);
    // An all-zero reference has no scale to be relative to: the absolute error is the only
    // meaningful number (zero when the candidate is zero too).
    return ref > 0.0 ? diff / ref : diff;
}

ShardError shardErrorFromSums(int rank, const MetricSums& sums) {
    ShardError e;
    e.rank = rank;
    e.elements = sums.elements;
    e.relError = relFromSums(sums);
    return e;
}

TensorMetrics metricsFromSums(const MetricSums& s) {
    TensorMetrics m;
    m.elements = s.elements;
    m.relError = relFromSums(s);
    m.maxAbsError = s.nonFiniteMismatch > 0 ? std::numeric_limits<double>::infinity() : s.maxAbs;
    m.refNorm = std::sqrt(s.sumSqRef);
    m.candNorm = std::sqrt(s.sumSqCand);
    // Two zero tensors point the same way; one zero tensor is orthogonal to everything.
    if (m.refNorm > 0.0 && m.candNorm > 0.0) {
        m.cosine = std::clamp(s.dot / (m.refNorm * m.candNorm), -1.0, 1.0);
    } else {
        m.cosine = m.refNorm == m.candNorm ? 1.0 : 0.0;
    }
    m.refNaN = s.refNaN;
    m.refInf = s.refInf;
    m.candNaN = s.candNaN;
    m.candInf = s.candInf;
    m.nonFiniteMismatch = s.nonFiniteMismatch;
    return m;
}

double relativeError(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) {
        throw std::invalid_argument("relativeError: sizes differ");
    }
    return relFromSums(MetricSums::parallel(b.data(), a.data(), b.size()));
}

TensorMetrics computeMetrics(const FullTensor& reference, const FullTensor& candidate) {
    if (reference.values.size() != candidate.values.size()) {
        throw std::invalid_argument("computeMetrics: shapes differ");
    }
    TensorMetrics m = metricsFromSums(MetricSums::parallel(
        reference.values.data(), candidate.values.data(), reference.values.size()));
    for (const auto& shard : candidate.shards) {
        m.shards.push_back(shardError(shard, reference.values, candidate.values));
    }
    return m;
}

} // namespace ttrace
