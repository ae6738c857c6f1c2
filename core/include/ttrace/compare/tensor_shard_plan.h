#pragma once
// How the tensors of one diff are split between processes: by tensor, balanced by the bytes
// each process reads, and keeping together the tensors of the training state that inherit
// from one another across iterations (the floors and conditioning terms of a parameter or
// optimizer state at step N feed the same state at step N+1), so no process waits for another.
#include "ttrace/io/bundle.h"
#include "ttrace/io/tensor_id.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ttrace {

struct TensorShare {
    std::vector<std::size_t> indices; // into the diff's ids, ascending
    std::int64_t bytes = 0;           // shard bytes this process reads
};

// The bytes a comparison of `id` reads: the candidate's shards, the reference's nominal shards
// and those of its perturbed variants.
std::int64_t comparisonBytes(const Bundle& reference, const Bundle& candidate, const TensorId& id);

// Splits `ids` (diffTensorIds' list) into `parts` shares. Deterministic: every process computes
// the same plan from the same bundles.
std::vector<TensorShare> planTensorShares(const Bundle& reference, const Bundle& candidate,
                                          const std::vector<TensorId>& ids, int parts);

} // namespace ttrace
