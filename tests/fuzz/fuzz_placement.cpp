// libFuzzer target: placement attributes (as a rank file's HDF5 attributes or a localize
// reply's JSON fields carry them) through placementFromAttributes, then every run the accepted
// placement maps. An accepted placement must only map elements inside both tensors.
//
// Input layout (little-endian, make_seeds.py writes it):
//   u8 ndim, i64[ndim] global_shape | u8 placement (0 boxes, 1 flat, else unknown)
//   u8 combine (0 copy, 1 sum, 2 replica, else unknown) | i64 partial_index | u8 is_scalar
//   u8 local ndim, i64[] local shape
//   u8 has boxes, u16 n, i64[n] boxes, u8 has width, i64 width   (same again for flat_ranges)
#include "byte_reader.h"
#include "ttrace/io/placement_attributes.h"

#include <cstddef>
#include <cstdint>

namespace {

using ttrace::fuzz::ByteReader;

// Runs are visited only for local tensors this small (the fuzzer looks for wrong indices and
// loops that do not end, not for long copies).
constexpr std::int64_t kVisitLimit = std::int64_t{1} << 16;

ttrace::Shape readShape(ByteReader& in) {
    const std::size_t ndim = in.u8() % 6;
    ttrace::Shape shape;
    for (std::size_t d = 0; d < ndim; ++d) {
        shape.push_back(in.i64());
    }
    return shape;
}

void readRows(ByteReader& in, std::optional<std::vector<std::int64_t>>& values,
              std::optional<std::int64_t>& width) {
    if (in.u8() % 2 == 0) {
        return;
    }
    values = in.i64s(96);
    if (in.u8() % 2 != 0) {
        width = in.i64();
    }
}

ttrace::PlacementAttributes readAttributes(ByteReader& in) {
    static constexpr const char* kPlacements[] = {"boxes", "flat", "diagonal"};
    static constexpr const char* kCombines[] = {"copy", "sum", "replica", "max"};
    ttrace::PlacementAttributes a;
    a.globalShape = readShape(in);
    a.placement = kPlacements[in.u8() % 3];
    a.combine = kCombines[in.u8() % 4];
    a.partialIndex = in.i64();
    a.isScalar = in.u8() % 2 != 0;
    return a;
}

// Every run the placement maps must lie inside the local and the global tensor.
void checkRuns(const ttrace::Placement& p, const ttrace::Shape& localShape) {
    const std::int64_t localN = ttrace::elementCount(localShape);
    const std::int64_t globalN = ttrace::elementCount(p.globalShape);
    if (localN > kVisitLimit) {
        return;
    }
    std::int64_t visited = 0;
    ttrace::forEachRun(p, localShape, [&](std::int64_t local, std::int64_t global, std::int64_t n) {
        if (n <= 0 || local < 0 || global < 0 || local > localN - n || global > globalN - n) {
            __builtin_trap();
        }
        visited += n;
        if (visited > localN * static_cast<std::int64_t>(p.boxes.size() + p.ranges.size())) {
            __builtin_trap(); // more elements than the boxes can hold
        }
    });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    auto attributes = readAttributes(in);
    const auto localShape = readShape(in);
    readRows(in, attributes.boxes, attributes.boxesWidth);
    readRows(in, attributes.flatRanges, attributes.flatWidth);
    ttrace::PlacementProblem problem;
    const auto placement = ttrace::placementFromAttributes(attributes, localShape, problem);
    if (!placement) {
        if (problem.message.empty() ||
            (problem.code != "bad-placement" && problem.code != "placement-outside")) {
            __builtin_trap(); // a rejection must say why, with a known code
        }
        return 0;
    }
    (void)placement->describe();
    (void)ttrace::withinGlobalShape(*placement);
    checkRuns(*placement, localShape);
    return 0;
}
