#pragma once
// Parses a dataset's `placement_alternatives` attribute (docs/bundle-format.md): a JSON array
// of the placements capture could not exclude for an inferred layout, each by the placement
// attributes' own names plus its `label`. Every alternative is checked like the dataset's own
// placement, against the same local shape.
#include "ttrace/io/placement_attributes.h"
#include "ttrace/io/shard.h"

#include <optional>
#include <string>
#include <vector>

namespace ttrace {

std::optional<std::vector<PlacementAlternative>>
parsePlacementAlternatives(const std::string& text, const Shape& localShape, bool isScalar,
                           PlacementSource source, PlacementProblem& problem);

} // namespace ttrace
