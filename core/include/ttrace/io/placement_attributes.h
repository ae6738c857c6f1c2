#pragma once
// Builds a Placement from the attribute values that describe it (docs/bundle-format.md,
// "Placement semantics"). Rank files (HDF5 attributes) and localize replies (JSON fields of the
// same names, docs/protocol.md) carry the same attributes, so both go through this one parser.
#include "ttrace/io/diagnostic_code.h"
#include "ttrace/io/placement.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

struct PlacementAttributes {
    Shape globalShape;
    std::string placement; // "boxes" or "flat"
    std::string combine;   // "copy", "sum" or "replica"
    std::int64_t partialIndex = 0;
    bool isScalar = false;
    std::string source; // `placement_source`; empty when absent
    // Row-major integer rows: 3*ndim per box (local start, global start, length per dim) or 3
    // per flat range (local offset, global offset, length). `*Width` is the row width when
    // the source gave a 2-D array (checked against the expected one), absent for a flat list.
    std::optional<std::vector<std::int64_t>> boxes;
    std::optional<std::int64_t> boxesWidth;
    std::optional<std::vector<std::int64_t>> flatRanges;
    std::optional<std::int64_t> flatWidth;
};

struct PlacementProblem {
    DiagnosticCodeValue code = DiagnosticCode::BadPlacement; // or PlacementOutside
    std::string message; // says which attribute is wrong and how
};

// Checks every number before any arithmetic on it (values come from files and from the
// network): sizes, starts and lengths must lie in [0, kMaxLogicalElements] and the local
// tensor may hold at most kMaxLogicalElements elements, so no later sum or product overflows.
std::optional<Placement> placementFromAttributes(const PlacementAttributes& attributes,
                                                 const Shape& localShape,
                                                 PlacementProblem& problem);

} // namespace ttrace
