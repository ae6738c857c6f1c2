#include "compare/error_slices.h"

#include <cmath>

namespace ttrace {

std::vector<ErrorSlice> errorSlices(const FullTensor& candidate) {
    std::vector<ErrorSlice> out;
    for (const auto& shard : candidate.shards) {
        const bool partial = shard.placement.combine == Combine::Sum;
        // One slice per box (or flat range): a CP rank holds two sequence chunks.
        const std::size_t pieces = shard.placement.kind == PlacementKind::Flat
                                       ? shard.placement.ranges.size()
                                       : shard.placement.boxes.size();
        for (std::size_t p = 0; p < pieces; ++p) {
            Placement one = shard.placement;
            if (one.kind == PlacementKind::Flat) {
                one.ranges = {shard.placement.ranges[p]};
            } else {
                one.boxes = {shard.placement.boxes[p]};
            }
            ErrorSlice slice;
            slice.rank = shard.rank;
            slice.partial = partial;
            forEachRun(one, shard.localShape,
                       [&](std::int64_t local, std::int64_t global, std::int64_t count) {
                           for (std::int64_t k = 0; k < count; ++k) {
                               slice.global.push_back(global + k);
                               const auto li = static_cast<std::size_t>(local + k);
                               const auto gi = static_cast<std::size_t>(global + k);
                               slice.own.push_back(partial || li >= shard.values.size()
                                                       ? candidate.values[gi]
                                                       : shard.values[li]);
                           }
                       });
            if (!slice.global.empty()) {
                slice.firstGlobal = slice.global.front();
                out.push_back(std::move(slice));
            }
        }
    }
    return out;
}

double relDiff(const std::vector<double>& a, const std::vector<double>& b) {
    double num = 0.0;
    double den = 0.0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<double> gather(const std::vector<double>& values,
                           const std::vector<std::int64_t>& indices) {
    std::vector<double> out;
    out.reserve(indices.size());
    for (const auto i : indices) {
        out.push_back(values[static_cast<std::size_t>(i)]);
    }
    return out;
}

} // namespace ttrace
