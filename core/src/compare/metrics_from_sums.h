#pragma once
// The metrics derived from accumulated sums, shared by the element-wise path (metrics.cpp) and
// the comparison straight from stored bytes (clean_comparison.cpp). Private to core.
#include "compare/metric_sums.h"

#include "ttrace/compare/metrics.h"

namespace ttrace {

// ||cand - ref|| / ||ref|| (the absolute error when ||ref|| == 0; infinite on non-finite
// mismatch).
double relFromSums(const MetricSums& sums);

// Every whole-tensor metric; `shards` is left empty.
TensorMetrics metricsFromSums(const MetricSums& sums);

ShardError shardErrorFromSums(int rank, const MetricSums& sums);

} // namespace ttrace
