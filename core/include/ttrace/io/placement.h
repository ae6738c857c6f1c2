#pragma once
// Where a shard's elements live in the logical tensor (see docs/bundle-format.md, "Placement
// semantics"). One language covers TP, SP, CP, PP, DP, EP and sharded optimizers.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace {

using Shape = std::vector<std::int64_t>;

enum class Combine { Copy, Sum, Replica };
enum class PlacementKind { Boxes, Flat };
// Where the capture got a placement from (the `placement_source` attribute): what the job
// declares, an inference, or a hand annotation. Unknown: not recorded (bundles written before
// the attribute, or a value this build does not know).
enum class PlacementSource { Unknown, Declared, Inferred, Annotated };

std::optional<Combine> parseCombine(std::string_view name);
std::string_view combineName(Combine combine);
PlacementSource parsePlacementSource(std::string_view name);
std::string_view placementSourceName(PlacementSource source); // "" for Unknown
// The least trusted of two sources: unknown, then inferred, annotated, declared.
PlacementSource weakerSource(PlacementSource a, PlacementSource b);

struct DimSlice {
    std::int64_t localStart = 0;
    std::int64_t globalStart = 0;
    std::int64_t length = 0;
};

struct Box {
    std::vector<DimSlice> dims;
};

struct FlatRange {
    std::int64_t localOffset = 0;
    std::int64_t globalOffset = 0;
    std::int64_t length = 0;
};

struct Placement {
    Shape globalShape;
    PlacementKind kind = PlacementKind::Boxes;
    std::vector<Box> boxes;
    std::vector<FlatRange> ranges;
    Combine combine = Combine::Copy;
    std::int64_t partialIndex = 0;
    bool isScalar = false;
    PlacementSource source = PlacementSource::Unknown; // says how far to trust the rest

    [[nodiscard]] std::string describe() const;
};

// Largest logical tensor the engine accepts (2^40 elements, 8 TiB as doubles): anything larger
// is a corrupt shape, not a real activation.
inline constexpr std::int64_t kMaxLogicalElements = std::int64_t{1} << 40;

std::int64_t elementCount(const Shape& shape);
std::string shapeToString(const Shape& shape);

// Returns why the placement cannot apply to a local tensor of `localShape`, or nothing.
std::optional<std::string> checkPlacement(const Placement& placement, const Shape& localShape);
// Whether every box / flat range lies inside the global shape (the "placement-outside" kind of
// problem, as opposed to a malformed placement).
bool withinGlobalShape(const Placement& placement);

// Whether the placement maps the whole local tensor, in order, to one box (or one flat range)
// of the logical tensor: then the shard can be read straight into its place.
bool placesDirectly(const Placement& placement, const Shape& localShape);

// Calls fn(localFlatIndex, globalFlatIndex, count) for each contiguous run of elements the
// placement maps (row-major). Runs let callers copy whole rows instead of single elements.
// The placement must have passed checkPlacement.
void forEachRun(const Placement& placement, const Shape& localShape,
                const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& fn);

} // namespace ttrace
