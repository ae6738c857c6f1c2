#pragma once
// Settles a placement the capture inferred (docs/bundle-format.md, `placement_alternatives`)
// with evidence, never with the values compared: a hypothesis must rebuild the reference's
// full shape, merge without holes or overlaps, and, where it takes copies for replicas, find
// them byte-identical across their group. One hypothesis left: it is compared. Several left
// whose rebuilt tensors differ, or none left by replica disagreement alone: unresolved.
// Private to core.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/bundle.h"
#include "ttrace/merge/merge.h"

#include <optional>
#include <vector>

namespace ttrace {

enum class ResolutionOutcome {
    Chosen,     // one hypothesis fits (its merge is in `merged`)
    Unresolved, // several fit with different values, or replica disagreement excluded all
    NoneFits,   // no hypothesis rebuilds the reference's shape: compare the capture's own
};

struct ResolvedPlacement {
    ResolutionOutcome outcome = ResolutionOutcome::NoneFits;
    PlacementResolution resolution;
    std::optional<MergeResult> merged; // of the chosen hypothesis
    std::vector<ShardRef> shards; // the candidate's shards as the chosen hypothesis places them
};

// Whether some shard of the tensor carries alternatives.
bool hasAlternatives(const std::vector<ShardRef>& shards);

// `shards` are the candidate's; `referenceShape` the reference's logical shape.
ResolvedPlacement resolvePlacement(const Bundle& candidate, const TensorId& id,
                                   const std::vector<ShardRef>& shards,
                                   const Shape& referenceShape);

// The same on shards already read: `raw[i]` holds the bytes of `shards[i]`.
ResolvedPlacement resolveShards(const TensorId& id, const std::vector<ShardRef>& shards,
                                const std::vector<RawShard>& raw, const Shape& referenceShape);

} // namespace ttrace
