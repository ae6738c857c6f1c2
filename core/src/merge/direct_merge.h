#pragma once
// The merge without a merge: when a tensor's shards are a disjoint exact cover of it (or
// identical copies of one), each shard is read straight into its place in one buffer of the
// stored dtype. No zero-fill, no decoded copy per shard, no ownership map. Private to core.
#include "merge/byte_buffer.h"

#include "ttrace/io/bundle.h"
#include "ttrace/io/dtype.h"
#include "ttrace/io/tensor_id.h"
#include "ttrace/merge/merge.h"

#include <optional>
#include <vector>

namespace ttrace {

struct DirectTensor {
    DType dtype = DType::Float32;
    Shape shape;
    ByteBuffer raw; // row-major, every element written by exactly one shard read
    // By rank. Each shard's own values equal `raw` over its box: replicas were compared
    // byte for byte.
    std::vector<const ShardRef*> shards;
    // The shard whose read filled shards[i]'s box: i itself, or the earlier shard whose box a
    // replica repeats.
    std::vector<std::size_t> owner;
};

// Reads the tensor in place when no element-wise merge is needed: copy or replica shards,
// each one box (or flat range) read whole, whose boxes form a disjoint exact cover or
// identical copies of one that agree byte for byte. Nothing otherwise (sum partials, gaps,
// overlaps, replicas that differ, mismatched shards): mergeTensor then merges element-wise
// and reports what is wrong. Throws BundleError when a read fails.
std::optional<DirectTensor> mergeDirect(const Bundle& bundle, const TensorId& id);

// The same tensor as mergeShards would build it (values, bits and each shard's own values).
FullTensor toFullTensor(const TensorId& id, const DirectTensor& direct);

} // namespace ttrace
