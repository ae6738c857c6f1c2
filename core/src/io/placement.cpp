#include "ttrace/io/placement.h"

#include <algorithm>

#include <sstream>

namespace ttrace {

std::optional<Combine> parseCombine(std::string_view name) {
    if (name == "copy") {
        return Combine::Copy;
    }
    if (name == "sum") {
        return Combine::Sum;
    }
    if (name == "replica") {
        return Combine::Replica;
    }
    return std::nullopt;
}

std::string_view combineName(Combine combine) {
    switch (combine) {
    case Combine::Copy: return "copy";
    case Combine::Sum: return "sum";
    case Combine::Replica: return "replica";
    }
    return "copy";
}

PlacementSource parsePlacementSource(std::string_view name) {
    if (name == "declared") {
        return PlacementSource::Declared;
    }
    if (name == "inferred") {
        return PlacementSource::Inferred;
    }
    if (name == "annotated") {
        return PlacementSource::Annotated;
    }
    return PlacementSource::Unknown;
}

std::string_view placementSourceName(PlacementSource source) {
    switch (source) {
    case PlacementSource::Declared: return "declared";
    case PlacementSource::Inferred: return "inferred";
    case PlacementSource::Annotated: return "annotated";
    case PlacementSource::Unknown: return "";
    }
    return "";
}

PlacementSource weakerSource(PlacementSource a, PlacementSource b) {
    // Ordered from least to most trusted.
    for (const auto s :
         {PlacementSource::Unknown, PlacementSource::Inferred, PlacementSource::Annotated}) {
        if (a == s || b == s) {
            return s;
        }
    }
    return PlacementSource::Declared;
}

std::int64_t elementCount(const Shape& shape) {
    std::int64_t n = 1;
    for (auto d : shape) {
        n *= d;
    }
    return n;
}

std::string shapeToString(const Shape& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        out += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return out + "]";
}

std::string Placement::describe() const {
    std::ostringstream out;
    out << combineName(combine);
    if (combine == Combine::Sum) {
        out << "(partial " << partialIndex << ")";
    }
    if (kind == PlacementKind::Flat) {
        out << " flat";
        for (const auto& r : ranges) {
            out << " [" << r.globalOffset << ":" << r.globalOffset + r.length << ")";
        }
        return out.str();
    }
    for (const auto& box : boxes) {
        out << " [";
        for (std::size_t d = 0; d < box.dims.size(); ++d) {
            const auto& s = box.dims[d];
            out << (d ? "," : "") << s.globalStart << ":" << s.globalStart + s.length;
        }
        out << "]";
    }
    return out.str();
}

std::optional<std::string> checkPlacement(const Placement& placement, const Shape& localShape) {
    // Bound the logical size before anything is allocated for it: a corrupt global_shape must
    // produce a message, not a multi-terabyte allocation or an overflowed element count.
    std::int64_t total = 1;
    for (auto d : placement.globalShape) {
        if (d < 0) {
            return "global_shape " + shapeToString(placement.globalShape) + " has a negative size";
        }
        if (d > 0 && total > kMaxLogicalElements / d) {
            return "global_shape " + shapeToString(placement.globalShape) +
                   " is implausibly large (more than 2^40 elements)";
        }
        total *= d;
    }
    if (placement.kind == PlacementKind::Flat) {
        const std::int64_t localN = elementCount(localShape);
        const std::int64_t globalN = elementCount(placement.globalShape);
        for (const auto& r : placement.ranges) {
            if (r.length < 0 || r.localOffset < 0 || r.globalOffset < 0) {
                return "flat range has a negative offset or length";
            }
            if (r.localOffset + r.length > localN) {
                return "flat range [" + std::to_string(r.localOffset) + ", " +
                       std::to_string(r.localOffset + r.length) +
                       ") lies outside the local tensor of " + std::to_string(localN) + " elements";
            }
            if (r.globalOffset + r.length > globalN) {
                return "flat range [" + std::to_string(r.globalOffset) + ", " +
                       std::to_string(r.globalOffset + r.length) +
                       ") lies outside the logical tensor of " + std::to_string(globalN) +
                       " elements";
            }
        }
        return std::nullopt;
    }
    const std::size_t ndim = placement.globalShape.size();
    if (localShape.size() != ndim) {
        return "local shape " + shapeToString(localShape) + " and global_shape " +
               shapeToString(placement.globalShape) + " differ in rank";
    }
    for (std::size_t b = 0; b < placement.boxes.size(); ++b) {
        const auto& box = placement.boxes[b];
        if (box.dims.size() != ndim) {
            return "box " + std::to_string(b) + " has " + std::to_string(box.dims.size()) +
                   " dimensions, the tensor has " + std::to_string(ndim);
        }
        for (std::size_t d = 0; d < ndim; ++d) {
            const auto& s = box.dims[d];
            if (s.length < 0 || s.localStart < 0 || s.globalStart < 0) {
                return "box " + std::to_string(b) + " has a negative start or length in dim " +
                       std::to_string(d);
            }
            if (s.localStart + s.length > localShape[d]) {
                return "box " + std::to_string(b) + " dim " + std::to_string(d) + " [" +
                       std::to_string(s.localStart) + ", " +
                       std::to_string(s.localStart + s.length) + ") lies outside the local shape " +
                       shapeToString(localShape);
            }
            if (s.globalStart + s.length > placement.globalShape[d]) {
                return "box " + std::to_string(b) + " dim " + std::to_string(d) + " [" +
                       std::to_string(s.globalStart) + ", " +
                       std::to_string(s.globalStart + s.length) +
                       ") lies outside the global_shape " + shapeToString(placement.globalShape);
            }
        }
    }
    return std::nullopt;
}

bool withinGlobalShape(const Placement& placement) {
    if (placement.kind == PlacementKind::Flat) {
        const std::int64_t globalN = elementCount(placement.globalShape);
        return std::all_of(placement.ranges.begin(), placement.ranges.end(),
                           [globalN](const FlatRange& r) {
                               return r.globalOffset >= 0 && r.globalOffset + r.length <= globalN;
                           });
    }
    for (const auto& box : placement.boxes) {
        for (std::size_t d = 0; d < box.dims.size() && d < placement.globalShape.size(); ++d) {
            const auto& s = box.dims[d];
            if (s.globalStart < 0 || s.globalStart + s.length > placement.globalShape[d]) {
                return false;
            }
        }
    }
    return true;
}

bool placesDirectly(const Placement& placement, const Shape& localShape) {
    if (placement.kind == PlacementKind::Flat) {
        return placement.ranges.size() == 1 && placement.ranges.front().localOffset == 0 &&
               placement.ranges.front().length == elementCount(localShape);
    }
    if (placement.boxes.size() != 1 ||
        placement.boxes.front().dims.size() != placement.globalShape.size() ||
        localShape.size() != placement.globalShape.size()) {
        return false;
    }
    const auto& dims = placement.boxes.front().dims;
    for (std::size_t d = 0; d < dims.size(); ++d) {
        if (dims[d].localStart != 0 || dims[d].length != localShape[d]) {
            return false;
        }
    }
    return true;
}

void forEachRun(const Placement& placement, const Shape& localShape,
                const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& fn) {
    if (placement.kind == PlacementKind::Flat) {
        for (const auto& r : placement.ranges) {
            if (r.length > 0) {
                fn(r.localOffset, r.globalOffset, r.length);
            }
        }
        return;
    }
    const std::size_t ndim = placement.globalShape.size();
    // Row-major strides of both tensors.
    std::vector<std::int64_t> localStride(ndim, 1);
    std::vector<std::int64_t> globalStride(ndim, 1);
    for (std::size_t d = ndim; d-- > 1;) {
        localStride[d - 1] = localStride[d] * localShape[d];
        globalStride[d - 1] = globalStride[d] * placement.globalShape[d];
    }
    for (const auto& box : placement.boxes) {
        if (ndim == 0) {
            fn(0, 0, 1);
            continue;
        }
        bool empty = false;
        for (const auto& s : box.dims) {
            empty = empty || s.length == 0;
        }
        if (empty) {
            continue;
        }
        // Iterate over all index tuples of the outer ndim-1 dimensions; the last dimension is
        // one contiguous run.
        const std::int64_t runLength = box.dims[ndim - 1].length;
        std::vector<std::int64_t> counter(ndim, 0);
        while (true) {
            std::int64_t localFlat = 0;
            std::int64_t globalFlat = 0;
            for (std::size_t d = 0; d < ndim; ++d) {
                localFlat += (box.dims[d].localStart + counter[d]) * localStride[d];
                globalFlat += (box.dims[d].globalStart + counter[d]) * globalStride[d];
            }
            fn(localFlat, globalFlat, runLength);
            std::size_t d = ndim - 1;
            bool done = true;
            while (d-- > 0) {
                if (++counter[d] < box.dims[d].length) {
                    done = false;
                    break;
                }
                counter[d] = 0;
            }
            if (done) {
                break;
            }
        }
    }
}

} // namespace ttrace
