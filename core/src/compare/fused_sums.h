#pragma once
// The sums of one comparison computed straight from the tensors' stored bytes: each block is
// decoded into a per-thread buffer and every quantity that needs it is accumulated while it is
// there. Private to core. Every sum is taken in the same order, over the same blocks, as the
// element-wise path (metrics.cpp, error_histogram.cpp) takes it on decoded tensors, so results
// are bit-identical to it.
#include "compare/metric_sums.h"

#include "ttrace/compare/histogram.h"
#include "ttrace/io/dtype.h"
#include "ttrace/io/placement.h"

#include <cstddef>
#include <span>
#include <vector>

namespace ttrace {

// A whole logical tensor, row-major, in its stored dtype.
struct StoredTensor {
    DType dtype = DType::Float32;
    std::span<const std::byte> bytes;
    [[nodiscard]] std::size_t size() const { return bytes.size() / dtypeSize(dtype); }
};

struct TotalSums {
    MetricSums metrics;             // candidate against reference (computeMetrics' sums)
    std::vector<MetricSums> floors; // each perturbed variant against the reference
};

// One pass over all elements: the metrics' sums and every variant's noise-floor sums, in the
// blocks of MetricSums::parallel. All tensors have the same number of elements.
TotalSums totalSums(const StoredTensor& ref, const StoredTensor& cand,
                    const std::vector<StoredTensor>& variants);

// The root mean square of the reference's finite values, summed in index order as the error
// histogram defines it.
double finiteRms(const StoredTensor& ref);

// A candidate shard whose box the comparison covers: its sums are taken over its runs.
struct ShardBox {
    const Placement* placement = nullptr;
    const Shape* localShape = nullptr;
};

struct ShardSums {
    std::vector<MetricSums> shards; // per ShardBox, over its runs in forEachRun order
    ErrorHistogram histogram;       // over every shard's elements
};

// One pass over the shards' boxes (which must cover the tensor exactly once, the candidate's
// values at each element being the shard's own): per-shard error sums and the error
// histogram in units of `unit`. Shards are processed in parallel.
ShardSums shardSums(const StoredTensor& ref, const StoredTensor& cand,
                    const std::vector<ShardBox>& shards, double unit);

} // namespace ttrace
