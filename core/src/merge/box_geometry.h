#pragma once
// One rule for the shards of one tensor that claim elements, used by validate, diff and the
// explorer alike (they all merge through mergeShards): decided from the boxes alone, before
// any buffer of the logical tensor's size is allocated.
//   - a disjoint exact cover is a split;
//   - boxes repeated identically on several ranks are replicas, whose values are compared;
//   - boxes that partly overlap, leave a gap, or reach outside the tensor are errors that
//     name the tensor and the ranks.
#include "ttrace/io/placement.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

enum class BoxCoverage {
    ExactCover,     // disjoint boxes covering every element once
    Replicas,       // an exact cover once identical copies on other ranks are set aside
    PartialOverlap, // two distinct boxes share some elements
    Gap,            // some elements are covered by no box
    OutOfBounds,    // a box reaches outside the global shape (or its extent overflows)
};

struct ShardGeometry {
    int rank = 0;
    const Placement* placement = nullptr;
};

struct CoverageVerdict {
    BoxCoverage kind = BoxCoverage::ExactCover;
    int rankA = -1; // the ranks of the first offending box pair, or of the bad box (rankA)
    int rankB = -1;
    std::int64_t covered = 0; // distinct elements covered (PartialOverlap: elements shared)
    std::int64_t total = 0;   // elements of the logical tensor
    std::string detail;       // which boxes, for the message
};

// Classifies the boxes (or flat ranges) of shards that are copies of one tensor (one partial
// of a sum). Nothing when the shards mix box and flat placements: then only an element-wise
// merge can tell.
std::optional<CoverageVerdict> classifyCoverage(const Shape& globalShape,
                                                const std::vector<ShardGeometry>& shards);

} // namespace ttrace
