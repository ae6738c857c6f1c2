#include "compare/timeline.h"

#include "ttrace/io/time_place.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace ttrace {
namespace {

// Backward runs modules in reverse execution order; every other phase in execution order.
int orderInPhase(const DiffResult& r, const TensorResult& t) {
    const auto* m = r.module(t.id.module);
    const int order = m ? m->order : 0;
    return timePlaceOf(t.id).phase == Phase::Backward ? -order : order;
}

auto timeKey(const DiffResult& r, const TensorResult& t) {
    return std::make_tuple(timePlaceOf(t.id), t.id.microBatch, orderInPhase(r, t));
}

bool sameStep(const TensorResult& a, const TensorResult& b) {
    return timePlaceOf(a.id) == timePlaceOf(b.id) && a.id.microBatch == b.id.microBatch;
}

std::vector<int> carryingRanks(const TensorResult& t) {
    for (const auto& s : t.signatures) {
        if (!s.ranks.empty() &&
            (s.kind == SignatureKind::SliceLocal || s.kind == SignatureKind::ReplicasDisagree)) {
            return s.ranks;
        }
    }
    std::set<int> bad;
    std::set<int> all;
    for (const auto& shard : t.metrics.shards) {
        all.insert(shard.rank);
        if (shard.relError > t.tolerance.value) {
            bad.insert(shard.rank);
        }
    }
    const auto& chosen = bad.empty() ? all : bad;
    return {chosen.begin(), chosen.end()};
}

// The first divergent tensor in time, then (same step) its first divergent submodule, so a
// layer whose fc2 is wrong names fc2.
std::size_t descend(const DiffResult& r, const std::vector<std::size_t>& divergent,
                    std::size_t best) {
    for (bool moved = true; moved;) {
        moved = false;
        for (const auto i : divergent) {
            const auto& t = r.tensors[i];
            if (sameStep(t, r.tensors[best]) &&
                isDescendantModule(t.id.module, r.tensors[best].id.module)) {
                best = i;
                moved = true;
                break;
            }
        }
    }
    return best;
}

FirstDivergence describeFirst(const DiffResult& r, const std::vector<std::size_t>& divergent,
                              std::size_t first) {
    const auto& t = r.tensors[first];
    const TimePlace at = timePlaceOf(t.id);
    FirstDivergence f{at.iteration, at.phase,         t.id.microBatch, t.id.module,
                      t.id.kind,    carryingRanks(t), first,           {}};
    std::set<std::string> seen{t.id.module};
    for (const auto i : divergent) {
        const auto& o = r.tensors[i];
        if (sameStep(o, t) && !isDescendantModule(t.id.module, o.id.module) &&
            seen.insert(o.id.module).second) {
            f.alsoInPhase.push_back(o.id.module);
        }
    }
    return f;
}

std::optional<std::string> firstOfKinds(const DiffResult& r,
                                        const std::vector<std::size_t>& divergent, bool backward) {
    std::vector<std::size_t> picked;
    for (const auto i : divergent) {
        const auto k = r.tensors[i].id.kind;
        const bool gradient = isBackwardKind(k);
        const bool activation = k == TensorKind::ForwardInput || k == TensorKind::ForwardOutput;
        if (backward ? gradient : activation) {
            picked.push_back(i);
        }
    }
    if (picked.empty()) {
        return std::nullopt;
    }
    return r.tensors[descend(r, picked, picked.front())].id.module;
}

} // namespace

bool isDescendantModule(const std::string& child, const std::string& parent) {
    return child.size() > parent.size() + 1 && child.starts_with(parent) &&
           child[parent.size()] == '.';
}

void buildTimeline(DiffResult& r) {
    r.timeline.clear();
    for (std::size_t i = 0; i < r.tensors.size(); ++i) {
        if (isFlagged(r.tensors[i].status)) {
            r.timeline.push_back(i);
        }
    }
    std::stable_sort(r.timeline.begin(), r.timeline.end(), [&](std::size_t a, std::size_t b) {
        return timeKey(r, r.tensors[a]) < timeKey(r, r.tensors[b]);
    });
    std::vector<std::size_t> divergent;
    for (const auto i : r.timeline) {
        if (r.tensors[i].status == Status::Divergent) {
            divergent.push_back(i);
        }
    }
    r.firstDivergence.reset();
    if (!divergent.empty()) {
        r.firstDivergence = describeFirst(r, divergent, descend(r, divergent, divergent.front()));
    }
    // An invalid neighbour never takes the headline (its error means nothing), but a report
    // says when one comes first in time: the divergence may have started there.
    r.earlierUncompared.reset();
    for (const auto i : r.timeline) {
        if (!divergent.empty() && i == divergent.front()) {
            break;
        }
        const auto status = r.tensors[i].status;
        if (status == Status::Invalid || status == Status::Missing ||
            status == Status::Unresolved) {
            r.earlierUncompared = i;
            break;
        }
    }
    r.firstForwardDivergence = firstOfKinds(r, divergent, false);
    r.firstBackwardDivergence = firstOfKinds(r, divergent, true);
}

} // namespace ttrace
