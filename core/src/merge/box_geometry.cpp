#include "box_geometry.h"

#include "ttrace/io/checked_math.h"

#include <algorithm>
#include <utility>

namespace ttrace {
namespace {

// A half-open hyper-rectangle of the logical tensor ([lo, hi) per dimension); flat ranges are
// 1-D regions of the flattened tensor.
struct Region {
    int rank = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> span;
};

std::string spanText(const Region& r) {
    std::string out = "[";
    for (std::size_t d = 0; d < r.span.size(); ++d) {
        out += (d ? "," : "") + std::to_string(r.span[d].first) + ":" +
               std::to_string(r.span[d].second);
    }
    return out + "]";
}

std::int64_t volume(const Region& r) {
    std::int64_t v = 1;
    for (const auto& [lo, hi] : r.span) {
        v *= hi - lo; // inside the global shape, whose count is bounded: cannot overflow
    }
    return v;
}

// Elements two regions share (bounded by either's volume, so no overflow).
std::int64_t overlapVolume(const Region& a, const Region& b) {
    std::int64_t v = 1;
    for (std::size_t d = 0; d < a.span.size(); ++d) {
        v *= std::max<std::int64_t>(0, std::min(a.span[d].second, b.span[d].second) -
                                           std::max(a.span[d].first, b.span[d].first));
    }
    return v;
}

bool intersects(const Region& a, const Region& b) {
    for (std::size_t d = 0; d < a.span.size(); ++d) {
        if (std::max(a.span[d].first, b.span[d].first) >=
            std::min(a.span[d].second, b.span[d].second)) {
            return false;
        }
    }
    return true;
}

// Appends the non-empty regions of one shard; false when one lies outside `extent`.
bool addRegions(const ShardGeometry& s, const Shape& extent, std::vector<Region>& out) {
    const auto& p = *s.placement;
    auto add = [&](std::vector<std::pair<std::int64_t, std::int64_t>> starts) {
        Region r{s.rank, {}};
        bool empty = false;
        for (std::size_t d = 0; d < starts.size(); ++d) {
            const auto [start, length] = starts[d];
            const auto end = checkedAdd(start, length);
            if (start < 0 || length < 0 || !end || *end > extent[d]) {
                return false;
            }
            empty = empty || length == 0;
            r.span.emplace_back(start, *end);
        }
        if (!empty) {
            out.push_back(std::move(r));
        }
        return true;
    };
    if (p.kind == PlacementKind::Flat) {
        return std::all_of(p.ranges.begin(), p.ranges.end(), [&](const FlatRange& f) {
            return add({{f.globalOffset, f.length}});
        });
    }
    return std::all_of(p.boxes.begin(), p.boxes.end(), [&](const Box& b) {
        if (b.dims.size() != extent.size()) {
            return false;
        }
        std::vector<std::pair<std::int64_t, std::int64_t>> starts;
        for (const auto& d : b.dims) {
            starts.emplace_back(d.globalStart, d.length);
        }
        return add(std::move(starts));
    });
}

// Sets aside regions repeated identically (replicas); reports whether any were.
bool dropReplicas(std::vector<Region>& regions, CoverageVerdict& v) {
    std::stable_sort(regions.begin(), regions.end(),
                     [](const Region& a, const Region& b) { return a.span < b.span; });
    std::vector<Region> distinct;
    bool replicas = false;
    for (auto& r : regions) {
        if (!distinct.empty() && distinct.back().span == r.span) {
            if (distinct.back().rank == r.rank) {
                // One rank claiming the same box twice is no replica: it is an overlap.
                v = {BoxCoverage::PartialOverlap,
                     r.rank,
                     r.rank,
                     0,
                     v.total,
                     "rank " + std::to_string(r.rank) + " claims box " + spanText(r) + " twice"};
                return false;
            }
            replicas = true;
            continue;
        }
        distinct.push_back(std::move(r));
    }
    regions = std::move(distinct);
    return replicas;
}

// The first pair of distinct regions that share elements; sorted by their start in dim 0,
// a region only needs comparing with those that start before it ends.
std::optional<std::pair<const Region*, const Region*>> firstOverlap(std::vector<Region>& regions) {
    std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) {
        return a.span.front().first < b.span.front().first;
    });
    for (std::size_t i = 0; i < regions.size(); ++i) {
        for (std::size_t j = i + 1;
             j < regions.size() && regions[j].span.front().first < regions[i].span.front().second;
             ++j) {
            if (intersects(regions[i], regions[j])) {
                return std::pair{&regions[i], &regions[j]};
            }
        }
    }
    return std::nullopt;
}

} // namespace

std::optional<CoverageVerdict> classifyCoverage(const Shape& globalShape,
                                                const std::vector<ShardGeometry>& shards) {
    if (shards.empty()) {
        return std::nullopt;
    }
    const auto kind = shards.front().placement->kind;
    for (const auto& s : shards) {
        if (s.placement->kind != kind) {
            return std::nullopt;
        }
    }
    CoverageVerdict v;
    v.total = elementCount(globalShape); // bounded by kMaxLogicalElements when indexed
    // Flat ranges index the flattened tensor; a scalar is one element.
    const Shape extent = kind == PlacementKind::Flat ? Shape{v.total} : globalShape;
    std::vector<Region> regions;
    for (const auto& s : shards) {
        if (!addRegions(s, extent, regions)) {
            v.kind = BoxCoverage::OutOfBounds;
            v.rankA = s.rank;
            v.detail = "rank " + std::to_string(s.rank) + " has a box outside global_shape " +
                       shapeToString(globalShape);
            return v;
        }
    }
    if (extent.empty()) {
        // A scalar: every box is the one element, so any repetition is a replica.
        v.covered = regions.empty() ? 0 : 1;
        v.kind = v.covered < v.total
                     ? BoxCoverage::Gap
                     : (regions.size() > 1 ? BoxCoverage::Replicas : BoxCoverage::ExactCover);
        return v;
    }
    const bool replicas = dropReplicas(regions, v);
    if (v.kind == BoxCoverage::PartialOverlap) {
        return v;
    }
    if (const auto pair = firstOverlap(regions)) {
        v.kind = BoxCoverage::PartialOverlap;
        v.covered = overlapVolume(*pair->first, *pair->second);
        v.rankA = std::min(pair->first->rank, pair->second->rank);
        v.rankB = std::max(pair->first->rank, pair->second->rank);
        v.detail = "rank " + std::to_string(pair->first->rank) + " box " + spanText(*pair->first) +
                   " and rank " + std::to_string(pair->second->rank) + " box " +
                   spanText(*pair->second) + " share elements but are not identical";
        return v;
    }
    for (const auto& r : regions) {
        v.covered += volume(r); // disjoint and inside: the sum is at most total
    }
    v.kind = v.covered < v.total ? BoxCoverage::Gap
                                 : (replicas ? BoxCoverage::Replicas : BoxCoverage::ExactCover);
    return v;
}

} // namespace ttrace
