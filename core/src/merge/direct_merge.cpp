#include "merge/direct_merge.h"

#include "merge/box_geometry.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

namespace ttrace {
namespace {

// Below this many elements decoding stays on the calling thread (tensors are already compared
// in parallel one level up).
constexpr std::size_t kDecodeGrain = 1 << 16;

bool sameRegion(const Placement& a, const Placement& b) {
    if (a.kind != b.kind) {
        return false;
    }
    if (a.kind == PlacementKind::Flat) {
        return a.ranges.front().globalOffset == b.ranges.front().globalOffset &&
               a.ranges.front().length == b.ranges.front().length;
    }
    const auto& da = a.boxes.front().dims;
    const auto& db = b.boxes.front().dims;
    for (std::size_t d = 0; d < da.size(); ++d) {
        if (da[d].globalStart != db[d].globalStart || da[d].length != db[d].length) {
            return false;
        }
    }
    return true;
}

// Whether every shard can be read whole into its place, and they are pieces of one tensor.
bool readableInPlace(const std::vector<const ShardRef*>& shards) {
    const auto& first = *shards.front();
    return std::all_of(shards.begin(), shards.end(), [&](const ShardRef* s) {
        return s->placement.globalShape == first.placement.globalShape && s->dtype == first.dtype &&
               s->placement.combine == first.placement.combine &&
               s->placement.combine != Combine::Sum &&
               !checkPlacement(s->placement, s->localShape) && withinGlobalShape(s->placement) &&
               placesDirectly(s->placement, s->localShape);
    });
}

bool exactOrReplicaCover(const std::vector<const ShardRef*>& shards) {
    std::vector<ShardGeometry> geometry;
    for (const auto* s : shards) {
        geometry.push_back({s->rank, &s->placement});
    }
    const auto verdict = classifyCoverage(shards.front()->placement.globalShape, geometry);
    return verdict &&
           (verdict->kind == BoxCoverage::ExactCover || verdict->kind == BoxCoverage::Replicas);
}

// Whether a replica's bytes equal what its owner put in the tensor.
bool replicaAgrees(const Bundle& bundle, const ShardRef& shard, const DirectTensor& t) {
    ByteBuffer own(static_cast<std::size_t>(shard.bytes()));
    bundle.readShardInto(shard, own.span(), Bundle::Target::Contiguous);
    const std::size_t esize = dtypeSize(t.dtype);
    bool same = true;
    forEachRun(shard.placement, shard.localShape,
               [&](std::int64_t local, std::int64_t global, std::int64_t count) {
                   same = same &&
                          std::memcmp(own.data() + local * esize, t.raw.data() + global * esize,
                                      static_cast<std::size_t>(count) * esize) == 0;
               });
    return same;
}

} // namespace

std::optional<DirectTensor> mergeDirect(const Bundle& bundle, const TensorId& id) {
    const auto* refs = bundle.shards(id);
    if (!refs || refs->empty()) {
        return std::nullopt;
    }
    std::vector<const ShardRef*> shards;
    for (const auto& ref : *refs) {
        shards.push_back(&ref);
    }
    std::sort(shards.begin(), shards.end(),
              [](const ShardRef* a, const ShardRef* b) { return a->rank < b->rank; });
    if (!readableInPlace(shards) || !exactOrReplicaCover(shards)) {
        return std::nullopt;
    }
    DirectTensor t;
    t.dtype = shards.front()->dtype;
    t.shape = shards.front()->placement.globalShape;
    t.raw = ByteBuffer(static_cast<std::size_t>(elementCount(t.shape)) * dtypeSize(t.dtype));
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const auto& s = *shards[i];
        std::size_t owner = i;
        for (std::size_t j = 0; j < i && owner == i && s.elements() > 0; ++j) {
            if (t.owner[j] == j && shards[j]->elements() > 0 &&
                sameRegion(shards[j]->placement, s.placement)) {
                owner = j;
            }
        }
        if (owner != i && !replicaAgrees(bundle, s, t)) {
            return std::nullopt; // the element-wise merge names the disagreement
        }
        if (owner == i) {
            bundle.readShardInto(s, t.raw.span(), Bundle::Target::InTensor);
        }
        t.shards.push_back(&s);
        t.owner.push_back(owner);
    }
    return t;
}

FullTensor toFullTensor(const TensorId& id, const DirectTensor& direct) {
    FullTensor full;
    full.id = id;
    full.dtype = direct.dtype;
    full.shape = direct.shape;
    const std::size_t esize = dtypeSize(direct.dtype);
    full.values.resize(direct.raw.size() / esize);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, full.values.size(), kDecodeGrain),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                          decodeElements(
                              direct.dtype,
                              direct.raw.span().subspan(r.begin() * esize, r.size() * esize),
                              std::span(full.values).subspan(r.begin(), r.size()));
                      });
    full.rawBits.assign(direct.raw.data(), direct.raw.data() + direct.raw.size());
    for (const auto* s : direct.shards) {
        DecodedShard shard{s->rank, s->placement, s->localShape,
                           std::vector<double>(static_cast<std::size_t>(s->elements()))};
        forEachRun(s->placement, s->localShape,
                   [&](std::int64_t local, std::int64_t global, std::int64_t count) {
                       std::copy_n(full.values.data() + global, count, shard.values.data() + local);
                   });
        full.shards.push_back(std::move(shard));
    }
    return full;
}

} // namespace ttrace
