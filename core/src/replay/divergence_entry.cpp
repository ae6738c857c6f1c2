#include "ttrace/replay/divergence_entry.h"

#include <algorithm>
#include <map>

namespace ttrace::replay {

std::optional<TensorId> divergenceEntry(const DiffResult& diff, const LocalizeResult& r) {
    if (!r.start || r.introduced() || r.cancelled || !r.problems.empty() || r.verdicts.empty()) {
        return std::nullopt;
    }
    const bool allInherited = std::ranges::all_of(
        r.verdicts, [](const ModuleVerdict& v) { return v.verdict == Verdict::Inherited; });
    const bool backward = r.start->phase == LocalizePhase::Backward;
    if (!allInherited || (!backward && r.start->phase != LocalizePhase::Forward)) {
        return std::nullopt;
    }
    const auto consumed = backward ? TensorKind::OutputGrad : TensorKind::ForwardInput;
    std::map<std::string, int> order;
    for (const auto& m : diff.modules) {
        order[m.name] = m.order;
    }
    // The phase's root: the module that runs first in it (backward runs in reverse order).
    const TensorResult* root = nullptr;
    auto runsEarlier = [&](const TensorResult& a, const TensorResult& b) {
        const int oa = order.contains(a.id.module) ? order[a.id.module] : -1;
        const int ob = order.contains(b.id.module) ? order[b.id.module] : -1;
        if (oa != ob) {
            return backward ? oa > ob : oa < ob;
        }
        return a.id.microBatch < b.id.microBatch;
    };
    for (const auto& t : diff.tensors) {
        if (t.id.iteration == r.start->iteration && t.id.kind == consumed &&
            order.contains(t.id.module) && (!root || runsEarlier(t, *root))) {
            root = &t;
        }
    }
    // Only a root that diverges is an entry: otherwise the divergence came from elsewhere.
    if (root == nullptr || root->status != Status::Divergent) {
        return std::nullopt;
    }
    return root->id;
}

} // namespace ttrace::replay
