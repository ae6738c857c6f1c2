#pragma once
// A bug may change a module's structure rather than its numbers: an output that the
// candidate no longer returns (Megatron's row-parallel bias folded in before the reduction
// returns no bias), an extra one, a tensor whose shape no layout of the candidate's ranks can
// give. Where the module ran on both sides, that is a divergence at the module, not input that
// cannot be compared (docs/diff-json.md, "Structural divergences").
#include <optional>
#include <string_view>

#include "ttrace/io/diagnostic_code.h"

namespace ttrace {

enum class StructuralChange {
    None,
    MissingInCandidate, // the reference's module call has this tensor, the candidate's not
    ExtraInCandidate,   // the candidate's module call has a tensor the reference's has not
    ShapeChanged,       // both hold it, with shapes no layout of the candidate reconciles
};

// "none", "missing_in_candidate", "extra_in_candidate", "shape_changed".
std::string_view structuralChangeName(StructuralChange change);
std::optional<StructuralChange> parseStructuralChange(std::string_view name);
// The code of the finding that reports a change: the change's own name (docs/diff-json.md);
// None, which is no finding, gives InternalError.
DiagnosticCode structuralDiagnosticCode(StructuralChange change);

} // namespace ttrace
