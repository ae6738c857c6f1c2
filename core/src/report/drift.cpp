#include "ttrace/drift.h"

#include "ttrace/verdict.h"

#include <algorithm>

namespace ttrace {
namespace {

bool withinDrift(const TensorResult& t) {
    return t.status == Status::Divergent && t.structure == StructuralChange::None &&
           t.ratio > 1.0 && t.ratio <= kDriftBound;
}

// A module whose divergence is not drift: it introduced one (or its evidence is incomplete)
// and some of its tensors stay divergent.
bool realDivergence(const DiffResult& r, const ModuleResult& m) {
    if (m.origin != Origin::Introduced && m.origin != Origin::Undetermined) {
        return false;
    }
    return std::any_of(m.tensors.begin(), m.tensors.end(),
                       [&](std::size_t i) { return r.tensors[i].status == Status::Divergent; });
}

std::size_t markDirect(DiffResult& r, const EnvironmentDiff& env) {
    std::size_t marked = 0;
    for (auto& t : r.tensors) {
        if (withinDrift(t) && env.allowsDrift(t.id.module)) {
            t.status = Status::Drift;
            ++marked;
        }
    }
    return marked;
}

// Inherited drift: the inputs explain the module's divergence, and nothing upstream is a real
// divergence, so what it inherits is drift. When any module introduces a real divergence, the
// inheritors keep the usual verdict: which of the two they inherit cannot be told apart.
std::size_t markInherited(DiffResult& r) {
    if (std::any_of(r.modules.begin(), r.modules.end(),
                    [&](const ModuleResult& m) { return realDivergence(r, m); })) {
        return 0;
    }
    std::size_t marked = 0;
    for (const auto& m : r.modules) {
        if (m.origin != Origin::Inherited) {
            continue;
        }
        for (const auto i : m.tensors) {
            if (withinDrift(r.tensors[i])) {
                r.tensors[i].status = Status::Drift;
                ++marked;
            }
        }
    }
    return marked;
}

} // namespace

std::size_t applyDrift(DiffResult& r, const EnvironmentDiff& environment,
                       const std::vector<ModuleInfo>& modules) {
    auto& s = r.summary;
    s.environmentRecorded = environment.referenceRecorded && environment.candidateRecorded;
    s.environmentChanges.clear();
    for (const auto& c : environment.changes) {
        s.environmentChanges.push_back(c.toString());
    }
    const bool mayDrift = environment.runWide() || !environment.changedModules().empty();
    s.driftBound = mayDrift ? kDriftBound : 0.0;
    if (!mayDrift || markDirect(r, environment) + markInherited(r) == 0) {
        return 0;
    }
    assembleVerdicts(r, modules);
    for (auto& m : r.modules) {
        if (m.status == Status::Drift && environment.allowsDrift(m.name) &&
            m.origin == Origin::Introduced) {
            m.origin = Origin::Drift;
        }
    }
    return s.drift;
}

} // namespace ttrace
