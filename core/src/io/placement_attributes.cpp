#include "ttrace/io/placement_attributes.h"

namespace ttrace {
namespace {

bool inRange(std::int64_t v) {
    return v >= 0 && v <= kMaxLogicalElements;
}

// Negative values are left to checkPlacement, which names the box; only sizes that could
// overflow its sums are stopped here.
bool noneTooLarge(const std::vector<std::int64_t>& values) {
    for (const auto v : values) {
        if (v > kMaxLogicalElements) {
            return false;
        }
    }
    return true;
}

// Element count with every step checked, so a hostile shape cannot overflow the product.
std::optional<std::int64_t> boundedCount(const Shape& shape) {
    std::int64_t n = 1;
    for (const auto d : shape) {
        if (!inRange(d) || (d > 0 && n > kMaxLogicalElements / d)) {
            return std::nullopt;
        }
        n *= d;
    }
    return n;
}

bool readBoxes(const PlacementAttributes& a, Placement& p, PlacementProblem& problem) {
    const auto ndim = static_cast<std::int64_t>(p.globalShape.size());
    if (!a.boxes) {
        problem.message = "attribute 'boxes' is missing or not an integer array";
        return false;
    }
    const auto& values = *a.boxes;
    // A 1-D array is one box (h5py writes a single row that way).
    const std::int64_t width =
        a.boxesWidth ? *a.boxesWidth : static_cast<std::int64_t>(values.size());
    if (width != 3 * ndim || (ndim > 0 && values.size() % static_cast<std::size_t>(width) != 0)) {
        problem.message =
            "attribute 'boxes' must have shape [nbox, " + std::to_string(3 * ndim) + "]";
        return false;
    }
    const std::size_t nbox = ndim == 0 ? 1 : values.size() / static_cast<std::size_t>(width);
    for (std::size_t b = 0; b < nbox; ++b) {
        Box box;
        for (std::int64_t d = 0; d < ndim; ++d) {
            const std::size_t base =
                b * static_cast<std::size_t>(width) + static_cast<std::size_t>(3 * d);
            box.dims.push_back({values[base], values[base + 1], values[base + 2]});
        }
        p.boxes.push_back(std::move(box));
    }
    return true;
}

bool readFlat(const PlacementAttributes& a, Placement& p, PlacementProblem& problem) {
    if (!a.flatRanges || a.flatRanges->size() % 3 != 0 || (a.flatWidth && *a.flatWidth != 3)) {
        problem.message = "attribute 'flat_ranges' is missing or not shaped [n, 3]";
        return false;
    }
    const auto& values = *a.flatRanges;
    for (std::size_t i = 0; i + 2 < values.size(); i += 3) {
        p.ranges.push_back({values[i], values[i + 1], values[i + 2]});
    }
    return true;
}

} // namespace

std::optional<Placement> placementFromAttributes(const PlacementAttributes& a,
                                                 const Shape& localShape,
                                                 PlacementProblem& problem) {
    problem.code = DiagnosticCode::BadPlacement;
    Placement p;
    p.isScalar = a.isScalar;
    p.globalShape = a.globalShape;
    p.partialIndex = a.partialIndex;
    if (!boundedCount(localShape)) {
        problem.message = "local shape " + shapeToString(localShape) +
                          " has a negative or implausibly large size";
        return std::nullopt;
    }
    if (!boundedCount(a.globalShape)) {
        problem.message = "global_shape " + shapeToString(a.globalShape) +
                          " has a negative size or is implausibly large (more than 2^40 elements)";
        return std::nullopt;
    }
    const auto combine = parseCombine(a.combine);
    if (!combine) {
        problem.message = "unknown combine '" + a.combine + "' (expected copy, sum or replica)";
        return std::nullopt;
    }
    p.combine = *combine;
    // Not checked: a source this build does not know is reported as unknown, never fatal.
    p.source = parsePlacementSource(a.source);
    bool ok = false;
    if (a.placement == "boxes") {
        p.kind = PlacementKind::Boxes;
        ok = readBoxes(a, p, problem);
    } else if (a.placement == "flat") {
        p.kind = PlacementKind::Flat;
        ok = readFlat(a, p, problem);
    } else {
        problem.message = "unknown placement '" + a.placement + "' (expected boxes or flat)";
    }
    if (!ok) {
        return std::nullopt;
    }
    if ((a.boxes && !noneTooLarge(*a.boxes)) || (a.flatRanges && !noneTooLarge(*a.flatRanges))) {
        problem.message = "placement has an implausibly large start or length (over 2^40)";
        return std::nullopt;
    }
    if (auto why = checkPlacement(p, localShape)) {
        problem.code =
            withinGlobalShape(p) ? DiagnosticCode::BadPlacement : DiagnosticCode::PlacementOutside;
        problem.message = "placement " + *why;
        return std::nullopt;
    }
    return p;
}

} // namespace ttrace
