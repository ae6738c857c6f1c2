#include "ttrace/merge/merge.h"

#include "box_geometry.h"
#include "merge/direct_merge.h"

#include "ttrace/io/bundle_error.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <new>
#include <sstream>

namespace ttrace {
namespace {

constexpr std::int64_t kOwnerNone = -1;
// A tensor with a gap is still rebuilt (to name its first uncovered element) only while that
// costs at most a few times the memory of the data that is really there.
constexpr std::int64_t kExactHoleFactor = 4;
constexpr std::int64_t kExactHoleSlack = 1 << 16;
// Below this many elements a shard is decoded on the calling thread: TBB's task overhead
// would dominate, and tensors are already merged in parallel one level up.
constexpr std::size_t kParallelDecodeGrain = 1 << 16;

std::string multiIndex(std::int64_t flat, const Shape& shape) {
    std::vector<std::int64_t> idx(shape.size(), 0);
    for (std::size_t d = shape.size(); d-- > 0;) {
        idx[d] = shape[d] ? flat % shape[d] : 0;
        flat = shape[d] ? flat / shape[d] : 0;
    }
    return shapeToString(idx);
}

bool sameValue(double a, double b) {
    return a == b || (std::isnan(a) && std::isnan(b));
}

std::vector<double> decodeParallel(DType dtype, const std::vector<std::byte>& raw) {
    const std::size_t size = dtypeSize(dtype);
    std::vector<double> values(raw.size() / size);
    if (values.size() < kParallelDecodeGrain) {
        decodeElements(dtype, raw, values);
        return values;
    }
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, values.size(), kParallelDecodeGrain),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                          decodeElements(dtype,
                                         std::span(raw).subspan(r.begin() * size, r.size() * size),
                                         std::span(values).subspan(r.begin(), r.size()));
                      });
    return values;
}

// Conflicts between two ranks over shared elements, summarized for one message.
struct Conflict {
    std::int64_t count = 0;
    std::int64_t firstIndex = 0;
    double firstA = 0.0;
    double firstB = 0.0;
    double maxAbsDiff = 0.0;
};
using ConflictMap = std::map<std::pair<std::int64_t, std::int64_t>, Conflict>;

void addConflict(ConflictMap& conflicts, std::int64_t ownerRank, std::int64_t rank,
                 std::int64_t index, double a, double b) {
    auto& c = conflicts[{ownerRank, rank}];
    if (c.count == 0 || index < c.firstIndex) {
        c.firstIndex = index;
        c.firstA = a;
        c.firstB = b;
    }
    ++c.count;
    c.maxAbsDiff = std::max(c.maxAbsDiff, std::abs(a - b));
}

struct Run {
    std::int64_t local = 0;
    std::int64_t global = 0;
    std::int64_t count = 0;
};

// Combines shards that are copies of one (partial) tensor: the lowest rank wins, overlaps are
// compared (replica) or reported (copy).
struct GroupResult {
    std::vector<double> values;
    std::vector<std::byte> raw;
    std::vector<std::int64_t> owner; // shard rank per element, kOwnerNone if uncovered
};

// Copies one shard's runs into the group (in parallel: a shard's runs are disjoint); returns
// the conflicts with elements earlier shards already set.
ConflictMap applyShard(const RawShard& shard, const std::vector<double>& vals, Combine combine,
                       bool keepRaw, std::size_t esize, GroupResult& g) {
    std::vector<Run> runs;
    forEachRun(shard.placement, shard.localShape,
               [&](std::int64_t local, std::int64_t global, std::int64_t count) {
                   runs.push_back({local, global, count});
               });
    auto copyElements = [&](std::size_t g0, std::size_t l0, std::size_t len) {
        std::copy_n(vals.data() + l0, len, g.values.data() + g0);
        std::fill_n(g.owner.data() + g0, len, static_cast<std::int64_t>(shard.rank));
        if (keepRaw) {
            std::memcpy(g.raw.data() + g0 * esize, shard.raw.data() + l0 * esize, len * esize);
        }
    };
    tbb::enumerable_thread_specific<ConflictMap> localConflicts;
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, runs.size(), 64),
        [&](const tbb::blocked_range<std::size_t>& range) {
            auto& mine = localConflicts.local();
            for (std::size_t r = range.begin(); r != range.end(); ++r) {
                const auto g0 = static_cast<std::size_t>(runs[r].global);
                const auto l0 = static_cast<std::size_t>(runs[r].local);
                const auto len = static_cast<std::size_t>(runs[r].count);
                const auto* owner = g.owner.data() + g0;
                if (std::all_of(owner, owner + len,
                                [](std::int64_t o) { return o == kOwnerNone; })) {
                    copyElements(g0, l0, len); // the common case: a block copy
                    continue;
                }
                for (std::size_t k = 0; k < len; ++k) {
                    const double v = vals[l0 + k];
                    if (owner[k] == kOwnerNone) {
                        copyElements(g0 + k, l0 + k, 1);
                    } else if (combine == Combine::Copy || !sameValue(g.values[g0 + k], v)) {
                        addConflict(mine, owner[k], shard.rank, static_cast<std::int64_t>(g0 + k),
                                    g.values[g0 + k], v);
                    }
                }
            }
        });
    ConflictMap conflicts;
    for (const auto& mine : localConflicts) {
        for (const auto& [ranks, c] : mine) {
            auto& total = conflicts[ranks];
            if (total.count == 0 || c.firstIndex < total.firstIndex) {
                total.firstIndex = c.firstIndex;
                total.firstA = c.firstA;
                total.firstB = c.firstB;
            }
            total.count += c.count;
            total.maxAbsDiff = std::max(total.maxAbsDiff, c.maxAbsDiff);
        }
    }
    return conflicts;
}

void reportConflicts(const ConflictMap& conflicts, Combine combine, const Shape& globalShape,
                     const std::string& where, Diagnostics& findings) {
    for (const auto& [ranks, c] : conflicts) {
        std::ostringstream msg;
        msg.precision(9);
        if (combine == Combine::Copy) {
            msg << "shards of ranks " << ranks.first << " and " << ranks.second << " overlap at "
                << c.count << " elements (first at " << multiIndex(c.firstIndex, globalShape)
                << ") but combine is 'copy', which requires a disjoint split";
            findings.push_back(makeError(DiagnosticCode::Overlap, where, msg.str()));
        } else {
            msg << "replicas on ranks " << ranks.first << " and " << ranks.second << " disagree at "
                << c.count << " elements (first at " << multiIndex(c.firstIndex, globalShape)
                << ": " << c.firstA << " vs " << c.firstB << ", max abs difference " << c.maxAbsDiff
                << ")";
            // A warning, not an error: the bundle is well-formed and faithfully records that the
            // run's copies differ. That is a finding about the run (a classic silent bug), which
            // diff turns into a verdict; it must not make the bundle unreadable.
            findings.push_back(makeWarning(DiagnosticCode::ReplicaDisagree, where, msg.str()));
        }
    }
}

// Combines shards that are copies of one (partial) tensor: shards are applied lowest rank
// first, so it wins; overlaps are compared (replica) or reported (copy).
GroupResult combineGroup(const std::vector<const RawShard*>& group,
                         const std::vector<const std::vector<double>*>& decoded,
                         const Shape& globalShape, Combine combine, const std::string& where,
                         bool keepRaw, Diagnostics& findings) {
    const auto n = static_cast<std::size_t>(elementCount(globalShape));
    GroupResult g;
    g.values.assign(n, 0.0);
    g.owner.assign(n, kOwnerNone);
    const std::size_t esize = group.empty() ? 1 : dtypeSize(group.front()->dtype);
    if (keepRaw) {
        g.raw.assign(n * esize, std::byte{0});
    }
    ConflictMap conflicts;
    for (std::size_t s = 0; s < group.size(); ++s) {
        for (const auto& [ranks, c] :
             applyShard(*group[s], *decoded[s], combine, keepRaw, esize, g)) {
            auto& total = conflicts[ranks];
            if (total.count == 0 || c.firstIndex < total.firstIndex) {
                total.firstIndex = c.firstIndex;
                total.firstA = c.firstA;
                total.firstB = c.firstB;
            }
            total.count += c.count;
            total.maxAbsDiff = std::max(total.maxAbsDiff, c.maxAbsDiff);
        }
    }
    reportConflicts(conflicts, combine, globalShape, where, findings);
    return g;
}

// Why the shards cannot be merged at all (they disagree on what they are pieces of, or a piece
// does not fit), or nothing.
std::optional<Diagnostic> shardsProblem(const std::vector<RawShard>& shards,
                                        const std::string& where) {
    const auto& first = shards.front();
    for (const auto& s : shards) {
        const std::string rank = "rank " + std::to_string(s.rank);
        if (s.placement.globalShape != first.placement.globalShape || s.dtype != first.dtype ||
            s.placement.combine != first.placement.combine) {
            return makeError(DiagnosticCode::ShardMismatch, where,
                             rank + " disagrees with rank " + std::to_string(first.rank) +
                                 " on global_shape, dtype or combine; the shards cannot be merged");
        }
        if (auto problem = checkPlacement(s.placement, s.localShape)) {
            return makeError(DiagnosticCode::PlacementOutside, where, rank + ": " + *problem);
        }
        if (s.raw.size() !=
            static_cast<std::size_t>(elementCount(s.localShape)) * dtypeSize(first.dtype)) {
            return makeError(DiagnosticCode::ShortData, where,
                             rank + ": data size does not match its shape");
        }
    }
    return std::nullopt;
}

Diagnostic holeFinding(const std::vector<std::uint8_t>& covered, const Shape& globalShape,
                       const std::vector<RawShard>& shards, const std::string& where) {
    const auto holes = std::count(covered.begin(), covered.end(), 0);
    const auto first = std::distance(covered.begin(), std::find(covered.begin(), covered.end(), 0));
    std::string ranks;
    for (const auto& s : shards) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(s.rank);
    }
    return makeError(DiagnosticCode::Hole, where,
                     "hole: " + std::to_string(holes) + " of " + std::to_string(covered.size()) +
                         " elements are covered by no shard (first uncovered index " +
                         multiIndex(first, globalShape) + "; ranks present: " + ranks + ")");
}

// Adds one group's values into the full tensor (sum partials add up; a copy group is alone).
void accumulate(const GroupResult& g, FullTensor& full, std::vector<std::uint8_t>& covered) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, covered.size(), 1 << 14),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                          for (std::size_t i = r.begin(); i != r.end(); ++i) {
                              if (g.owner[i] == kOwnerNone) {
                                  continue;
                              }
                              // Assign the first contribution instead of adding it to 0.0,
                              // which would turn a stored -0.0 into +0.0 and break bit-exact
                              // rebuilding.
                              full.values[i] =
                                  covered[i] ? full.values[i] + g.values[i] : g.values[i];
                              covered[i] = 1;
                          }
                      });
}

std::string rankList(const std::vector<RawShard>& shards, const std::vector<std::size_t>& members) {
    std::string ranks;
    for (const auto i : members) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(shards[i].rank);
    }
    return ranks;
}

// How one group (a copy/replica tensor, or one partial of a sum) is combined, by the one
// geometry rule of box_geometry.h; nothing (with an error) when its boxes overlap partly,
// leave a gap or reach outside.
std::optional<Combine> groupMode(const std::vector<RawShard>& shards,
                                 const std::vector<std::size_t>& members, Combine combine,
                                 const std::string& where, Diagnostics& findings) {
    const Combine plain = combine == Combine::Sum ? Combine::Replica : combine;
    std::vector<ShardGeometry> geometry;
    for (const auto i : members) {
        geometry.push_back({shards[i].rank, &shards[i].placement});
    }
    const auto verdict = classifyCoverage(shards[members.front()].placement.globalShape, geometry);
    if (!verdict) {
        return plain; // mixed box and flat placements: the element-wise merge decides
    }
    const auto& v = *verdict;
    switch (v.kind) {
    case BoxCoverage::ExactCover: return plain;
    case BoxCoverage::Replicas: return Combine::Replica; // identical copies: compare them
    case BoxCoverage::PartialOverlap:
        findings.push_back(makeError(
            DiagnosticCode::Overlap, where,
            "shards of ranks " + std::to_string(v.rankA) + " and " + std::to_string(v.rankB) +
                " overlap at " + std::to_string(v.covered) + " elements, partly (" + v.detail +
                "): shards must be a disjoint split or identical copies"));
        return std::nullopt;
    case BoxCoverage::Gap:
        if (v.total <= kExactHoleFactor * v.covered + kExactHoleSlack) {
            // Small enough to rebuild at a few times the data's size: the element-wise merge
            // names the first uncovered index.
            return plain;
        }
        findings.push_back(makeError(
            DiagnosticCode::Hole, where,
            "hole: " + std::to_string(v.total - v.covered) + " of " + std::to_string(v.total) +
                " elements are covered by no shard (ranks present: " + rankList(shards, members) +
                ")"));
        return std::nullopt;
    case BoxCoverage::OutOfBounds:
        findings.push_back(makeError(DiagnosticCode::PlacementOutside, where, v.detail));
        return std::nullopt;
    }
    return std::nullopt;
}

} // namespace

MergeResult mergeShards(const TensorId& id, std::vector<RawShard> shards) {
    MergeResult result;
    const std::string where = "tensor " + id.path();
    if (shards.empty()) {
        result.findings.push_back(
            makeError(DiagnosticCode::NoShards, where, "no rank holds this tensor"));
        return result;
    }
    std::sort(shards.begin(), shards.end(),
              [](const RawShard& a, const RawShard& b) { return a.rank < b.rank; });
    if (auto problem = shardsProblem(shards, where)) {
        result.findings.push_back(std::move(*problem));
        return result;
    }
    const Shape globalShape = shards.front().placement.globalShape;
    const Combine combine = shards.front().placement.combine;
    const DType dtype = shards.front().dtype;
    // Group by partial: copy/replica are one group; sum groups by partial_index.
    std::map<std::int64_t, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        groups[combine == Combine::Sum ? shards[i].placement.partialIndex : 0].push_back(i);
    }
    // Decided before anything of the logical tensor's size is allocated.
    std::map<std::int64_t, Combine> modes;
    for (const auto& [partial, members] : groups) {
        const auto mode = groupMode(shards, members, combine, where, result.findings);
        if (!mode) {
            return result;
        }
        modes[partial] = *mode;
    }
    std::vector<std::vector<double>> decoded(shards.size());
    tbb::parallel_for(std::size_t{0}, shards.size(),
                      [&](std::size_t i) { decoded[i] = decodeParallel(dtype, shards[i].raw); });
    const auto n = static_cast<std::size_t>(elementCount(globalShape));
    FullTensor full;
    full.id = id;
    full.dtype = dtype;
    full.shape = globalShape;
    full.values.assign(n, 0.0);
    // uint8_t, not vector<bool>: parallel writes to neighbouring elements must not race.
    std::vector<std::uint8_t> covered(n, 0);
    const bool keepRaw = combine != Combine::Sum;
    for (const auto& [partial, members] : groups) {
        std::vector<const RawShard*> group;
        std::vector<const std::vector<double>*> values;
        for (auto i : members) {
            group.push_back(&shards[i]);
            values.push_back(&decoded[i]);
        }
        auto g = combineGroup(group, values, globalShape, modes[partial], where, keepRaw,
                              result.findings);
        accumulate(g, full, covered);
        if (keepRaw) {
            full.rawBits = std::move(g.raw);
        }
    }
    if (std::find(covered.begin(), covered.end(), 0) != covered.end()) {
        result.findings.push_back(holeFinding(covered, globalShape, shards, where));
        return result;
    }
    for (std::size_t i = 0; i < shards.size(); ++i) {
        full.shards.push_back(
            {shards[i].rank, shards[i].placement, shards[i].localShape, std::move(decoded[i])});
    }
    result.tensor = std::move(full);
    return result;
}

MergeResult mergeTensor(const Bundle& bundle, const TensorId& id) {
    const auto* refs = bundle.shards(id);
    if (!refs) {
        MergeResult missing;
        missing.findings.push_back(makeError(DiagnosticCode::NoShards, "tensor " + id.path(),
                                             "the bundle holds no such tensor"));
        return missing;
    }
    try {
        if (auto direct = mergeDirect(bundle, id)) {
            MergeResult merged;
            merged.tensor = toFullTensor(id, *direct);
            return merged;
        }
    } catch (const BundleError&) {
        // Read again below, shard by shard, which names the failure as a finding.
    } catch (const std::bad_alloc&) {
        // Likewise: the element-wise merge reports the tensor that does not fit.
    }
    std::vector<RawShard> shards;
    for (const auto& ref : *refs) {
        try {
            shards.push_back(
                {ref.rank, ref.dtype, ref.localShape, ref.placement, bundle.readShard(ref)});
        } catch (const BundleError& e) {
            MergeResult failed;
            failed.findings.push_back(
                makeError(DiagnosticCode::ReadFailed, "tensor " + id.path(), e.what()));
            return failed;
        }
    }
    try {
        return mergeShards(id, std::move(shards));
    } catch (const std::bad_alloc&) {
        MergeResult failed;
        failed.findings.push_back(makeError(DiagnosticCode::OutOfMemory, "tensor " + id.path(),
                                            "not enough memory to rebuild this tensor of " +
                                                shapeToString(refs->front().placement.globalShape) +
                                                " elements"));
        return failed;
    }
}

} // namespace ttrace
