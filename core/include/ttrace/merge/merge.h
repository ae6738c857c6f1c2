#pragma once
// Rebuilds the logical (full) tensor from its shards on many ranks and checks coverage:
// holes, overlaps under `copy`, and replicas (or replicated partials) that disagree.
#include "ttrace/io/bundle.h"
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/dtype.h"
#include "ttrace/io/placement.h"
#include "ttrace/io/tensor_id.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ttrace {

// A shard decoded to double, kept so per-rank metrics can be computed after merging.
struct DecodedShard {
    int rank = 0;
    Placement placement;
    Shape localShape;
    std::vector<double> values;
};

struct FullTensor {
    TensorId id;
    DType dtype = DType::Float32;
    Shape shape;
    std::vector<double> values; // row-major, decoded exactly (sums accumulate in double)
    // Raw bits of the rebuilt tensor in `dtype` storage; empty for `sum` (a sum is computed,
    // not stored).
    std::vector<std::byte> rawBits;
    std::vector<DecodedShard> shards;
};

struct MergeResult {
    std::optional<FullTensor> tensor; // absent when the shards cannot be combined
    // Coverage problems (errors) and replica disagreement (a warning naming the ranks: the
    // bundle is fine, the run is suspect).
    Diagnostics findings;
};

// Merges one tensor. Large tensors are decoded and combined in parallel with oneTBB.
MergeResult mergeTensor(const Bundle& bundle, const TensorId& id);

// Merges already-read shards (used by the reader above and by localization, whose shards come
// over the network rather than from files).
struct RawShard {
    int rank = 0;
    DType dtype = DType::Float32;
    Shape localShape;
    Placement placement;
    std::vector<std::byte> raw;
};
MergeResult mergeShards(const TensorId& id, std::vector<RawShard> shards);

} // namespace ttrace
