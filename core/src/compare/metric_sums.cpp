#include "compare/metric_sums.h"

#include <Eigen/Core>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h> // parallel_deterministic_reduce

#include <algorithm>
#include <cmath>

namespace ttrace {
namespace {

constexpr std::size_t kBlock = MetricSums::kParallelBlock;

using ConstMap = Eigen::Map<const Eigen::ArrayXd>;

bool sameNonFinite(double r, double c) {
    return (std::isnan(r) && std::isnan(c)) || (std::isinf(r) && r == c);
}

} // namespace

void MetricSums::addRun(const double* ref, const double* cand, std::int64_t count) {
    if (count <= 0) {
        return;
    }
    const ConstMap r(ref, count);
    const ConstMap c(cand, count);
    elements += count;
    if (r.allFinite() && c.allFinite()) {
        // A lazy expression, not a temporary: no allocation per run, and the same reduction
        // order (Eigen reduces both from index 0 in the same packets).
        const auto d = c - r;
        sumSqDiff += d.square().sum();
        sumSqRef += r.square().sum();
        sumSqCand += c.square().sum();
        dot += (r * c).sum();
        maxAbs = std::max(maxAbs, d.abs().maxCoeff());
        return;
    }
    // Rare path: count non-finite values element by element; finite pairs still contribute.
    for (std::int64_t i = 0; i < count; ++i) {
        const double rv = ref[i];
        const double cv = cand[i];
        refNaN += std::isnan(rv) ? 1 : 0;
        refInf += std::isinf(rv) ? 1 : 0;
        candNaN += std::isnan(cv) ? 1 : 0;
        candInf += std::isinf(cv) ? 1 : 0;
        if (std::isfinite(rv) && std::isfinite(cv)) {
            const double d = cv - rv;
            sumSqDiff += d * d;
            sumSqRef += rv * rv;
            sumSqCand += cv * cv;
            dot += rv * cv;
            maxAbs = std::max(maxAbs, std::abs(d));
        } else if (!sameNonFinite(rv, cv)) {
            ++nonFiniteMismatch;
        }
    }
}

void MetricSums::merge(const MetricSums& o) {
    sumSqDiff += o.sumSqDiff;
    sumSqRef += o.sumSqRef;
    sumSqCand += o.sumSqCand;
    dot += o.dot;
    maxAbs = std::max(maxAbs, o.maxAbs);
    elements += o.elements;
    refNaN += o.refNaN;
    refInf += o.refInf;
    candNaN += o.candNaN;
    candInf += o.candInf;
    nonFiniteMismatch += o.nonFiniteMismatch;
}

MetricSums MetricSums::parallel(const double* ref, const double* cand, std::size_t count) {
    if (count <= kBlock) {
        MetricSums s;
        s.addRun(ref, cand, static_cast<std::int64_t>(count));
        return s;
    }
    // Deterministic: the same inputs give bit-identical sums, so cached and fresh results agree.
    return tbb::parallel_deterministic_reduce(
        tbb::blocked_range<std::size_t>(0, count, kBlock), MetricSums{},
        [&](const tbb::blocked_range<std::size_t>& range, MetricSums acc) {
            acc.addRun(ref + range.begin(), cand + range.begin(),
                       static_cast<std::int64_t>(range.size()));
            return acc;
        },
        [](MetricSums a, const MetricSums& b) {
            a.merge(b);
            return a;
        });
}

} // namespace ttrace
