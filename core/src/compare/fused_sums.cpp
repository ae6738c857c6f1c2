#include "compare/fused_sums.h"

#include "compare/error_histogram.h"
#include "compare/scratch_pool.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h> // parallel_deterministic_reduce

#include <algorithm>
#include <cmath>

namespace ttrace {
namespace {

// Scratch slots: the reference, the candidate and one perturbed variant at a time.
enum Slot : std::size_t { kRefSlot, kCandSlot, kVariantSlot };

std::span<const double> decodeInto(const StoredTensor& t, std::size_t begin, std::size_t count,
                                   Slot slot) {
    const auto out = ScratchPool::shared().get(slot, count);
    const std::size_t esize = dtypeSize(t.dtype);
    decodeElements(t.dtype, t.bytes.subspan(begin * esize, count * esize), out);
    return out;
}

void addBlock(const StoredTensor& ref, const StoredTensor& cand,
              const std::vector<StoredTensor>& variants, std::size_t begin, std::size_t count,
              TotalSums& acc) {
    const auto r = decodeInto(ref, begin, count, kRefSlot);
    const auto c = decodeInto(cand, begin, count, kCandSlot);
    const auto n = static_cast<std::int64_t>(count);
    acc.metrics.addRun(r.data(), c.data(), n);
    for (std::size_t v = 0; v < variants.size(); ++v) {
        // relativeError(variant, nominal) sums with the nominal reference as "ref".
        acc.floors[v].addRun(r.data(), decodeInto(variants[v], begin, count, kVariantSlot).data(),
                             n);
    }
}

} // namespace

TotalSums totalSums(const StoredTensor& ref, const StoredTensor& cand,
                    const std::vector<StoredTensor>& variants) {
    const std::size_t n = ref.size();
    TotalSums identity;
    identity.floors.resize(variants.size());
    if (n <= MetricSums::kParallelBlock) {
        addBlock(ref, cand, variants, 0, n, identity);
        return identity;
    }
    // The blocks and the reduction tree of MetricSums::parallel: a deterministic reduce's tree
    // depends on the range and grain alone, so each sum here is bit-identical to it.
    return tbb::parallel_deterministic_reduce(
        tbb::blocked_range<std::size_t>(0, n, MetricSums::kParallelBlock), identity,
        [&](const tbb::blocked_range<std::size_t>& range, TotalSums acc) {
            addBlock(ref, cand, variants, range.begin(), range.size(), acc);
            return acc;
        },
        [](TotalSums a, const TotalSums& b) {
            a.metrics.merge(b.metrics);
            for (std::size_t v = 0; v < a.floors.size(); ++v) {
                a.floors[v].merge(b.floors[v]);
            }
            return a;
        });
}

double finiteRms(const StoredTensor& ref) {
    const std::size_t n = ref.size();
    double sum = 0.0;
    for (std::size_t begin = 0; begin < n; begin += MetricSums::kParallelBlock) {
        const std::size_t count = std::min(MetricSums::kParallelBlock, n - begin);
        sum = addFiniteSquares(sum, decodeInto(ref, begin, count, kRefSlot).data(), count);
    }
    return n == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(n));
}

ShardSums shardSums(const StoredTensor& ref, const StoredTensor& cand,
                    const std::vector<ShardBox>& shards, double unit) {
    ShardSums out;
    out.shards.resize(shards.size());
    std::vector<ErrorHistogram> histograms(shards.size(), emptyErrorHistogram());
    tbb::parallel_for(std::size_t{0}, shards.size(), [&](std::size_t s) {
        forEachRun(*shards[s].placement, *shards[s].localShape,
                   [&](std::int64_t, std::int64_t global, std::int64_t count) {
                       const auto begin = static_cast<std::size_t>(global);
                       const auto len = static_cast<std::size_t>(count);
                       const auto r = decodeInto(ref, begin, len, kRefSlot);
                       const auto c = decodeInto(cand, begin, len, kCandSlot);
                       out.shards[s].addRun(r.data(), c.data(), count);
                       addErrors(histograms[s], r.data(), c.data(), len, unit);
                   });
    });
    out.histogram = emptyErrorHistogram();
    for (const auto& h : histograms) {
        addHistograms(out.histogram, h);
    }
    return out;
}

} // namespace ttrace
