#pragma once
// Which tensors that cannot be compared value by value are structural divergences: the module
// call (iteration, micro-batch, module) ran on both sides, and the tensor is an activation or
// an activation gradient that one side lacks, or holds with a shape that no layout of the
// candidate's ranks explains. Private to core.
#include "ttrace/compare/structural_change.h"
#include "ttrace/io/bundle.h"

#include <cstdint>
#include <set>
#include <string>
#include <tuple>

namespace ttrace {

// (iteration, micro-batch, module) of every nominal tensor a bundle holds.
using ModuleCalls = std::set<std::tuple<std::int64_t, std::int64_t, std::string>>;

// The module calls both bundles captured.
ModuleCalls moduleCallsOnBothSides(const Bundle& reference, const Bundle& candidate);

// The structural change of a tensor that only one side holds: MissingInCandidate or
// ExtraInCandidate when its module call ran on both sides and the tensor is one the call's
// structure decides (forward inputs and outputs and their gradients), else None (the tensor
// stays missing: another run, another capture selection).
StructuralChange oneSidedChange(const TensorId& id, bool inReference, const ModuleCalls& both);

// ShapeChanged when the merged shapes of a tensor the call decides differ in a way no layout
// explains, else None. A layout over the candidate's ranks changes a dimension by a factor
// dividing the world size (a split taken for a replica, a batch split merged on the wrong
// dimension), never the number of dimensions or a dimension by another factor; what a layout
// could explain stays invalid: a layout to fix, not a verdict.
StructuralChange shapeChange(TensorKind kind, const Shape& reference, const Shape& candidate,
                             int candidateRanks);

} // namespace ttrace
