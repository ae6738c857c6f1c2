#pragma once
// The comparison of a tensor that needs no element-wise merge, straight from the stored bytes:
// shards read into place (merge/direct_merge.h), then the metrics, noise floors, per-shard
// errors and histogram in two passes over decode buffers reused per thread (fused_sums.h).
// Private to core.
#include "compare/tensor_comparison.h"

namespace ttrace {

// Fills r's tolerance, metrics, ratio, status and histogram exactly as the element-wise path
// would, and returns true. Returns false, leaving `r` untouched, when it cannot: a side or a
// perturbed variant needs an element-wise merge (sums, gaps, overlaps, replicas that differ,
// a failed read), the shapes differ, or the tensor diverges (its diagnosis reads the decoded
// tensors). The caller then compares element-wise.
bool compareClean(const ComparisonContext& context, const TensorId& id, TensorResult& r);

} // namespace ttrace
