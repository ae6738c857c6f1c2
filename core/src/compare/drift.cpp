#include "ttrace/compare/drift.h"
#include "ttrace/io/number_text.h"

#include "ttrace/compare/verdict.h"

#include "ttrace/io/time_place.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

namespace ttrace {
namespace {

bool withinDrift(const TensorResult& t) {
    return t.status == Status::Divergent && t.structure == StructuralChange::None &&
           t.ratio > 1.0 && t.ratio <= kDriftBound;
}

// A tensor's place on the run's timeline (report/timeline.cpp's order): iteration and phase,
// micro-batch, execution order within the phase (reversed in backward).
using TimeKey = std::tuple<TimePlace, std::int64_t, int>;

TimeKey timeKey(const DiffResult& r, const TensorResult& t) {
    const auto* m = r.module(t.id.module);
    const int order = m ? m->order : 0;
    const auto place = timePlaceOf(t.id);
    return {place, t.id.microBatch, place.phase == Phase::Backward ? -order : order};
}

// Where the first divergence that is not drift enters: the earliest divergent tensor beyond
// the bound, of a changed structure, or of a module that introduces a divergence where its
// kernel did not change. Nothing after it on the timeline can be told to inherit drift rather
// than it.
std::optional<TimeKey> firstRealDivergence(const DiffResult& r, const EnvironmentDiff& env) {
    std::optional<TimeKey> first;
    for (const auto& t : r.tensors) {
        if (t.status != Status::Divergent) {
            continue;
        }
        const auto* m = r.module(t.id.module);
        const bool introduced =
            m && (m->origin == Origin::Introduced || m->origin == Origin::Undetermined);
        if (t.ratio > kDriftBound || t.structure != StructuralChange::None ||
            (introduced && !env.allowsDrift(t.id.module))) {
            const auto key = timeKey(r, t);
            first = first ? std::min(*first, key) : key;
        }
    }
    return first;
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

// Inherited drift: the inputs explain the module's divergence (origin Inherited), within the
// bound, and it comes before any real divergence on the timeline, so what it inherits is
// drift. After a real divergence, inheritors keep the usual verdict: which of the two they
// inherit cannot be told apart.
std::size_t markInherited(DiffResult& r, const EnvironmentDiff& env) {
    const auto cutoff = firstRealDivergence(r, env);
    std::size_t marked = 0;
    for (const auto& m : r.modules) {
        if (m.origin != Origin::Inherited) {
            continue;
        }
        for (const auto i : m.tensors) {
            auto& t = r.tensors[i];
            if (withinDrift(t) && (!cutoff || timeKey(r, t) < *cutoff)) {
                t.status = Status::Drift;
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
    if (!mayDrift || markDirect(r, environment) + markInherited(r, environment) == 0) {
        return 0;
    }
    // The origins before marking say where drift entered; after marking, the origin analysis
    // sees drift as no divergence, so what stays divergent is localized on its own.
    std::map<std::string, Origin> before;
    for (const auto& m : r.modules) {
        before[m.name] = m.origin;
    }
    assembleVerdicts(r, modules);
    for (auto& m : r.modules) {
        if (m.status != Status::Drift) {
            continue;
        }
        const auto origin = before[m.name];
        m.origin = origin == Origin::Introduced && environment.allowsDrift(m.name)
                       ? Origin::Drift
                       : Origin::Inherited;
    }
    return s.drift;
}

std::string driftText(const DiffSummary& s) {
    if (s.drift == 0) {
        return {};
    }
    std::ostringstream out;
    out << s.drift << " tensors that drift (max ratio " << formatNumber(s.driftMaxRatio)
        << ", within the drift bound of " << formatNumber(s.driftBound)
        << "x the tolerance) where the kernel or version differs between the manifests, or "
           "downstream of it";
    return out.str();
}

std::string environmentText(const DiffSummary& s) {
    if (!s.environmentRecorded) {
        return "not recorded by both captures: no drift allowed";
    }
    if (s.environmentChanges.empty()) {
        return "same versions, devices and kernels: no drift allowed";
    }
    std::string out;
    for (const auto& line : s.environmentChanges) {
        out += (out.empty() ? "" : "; ") + line;
    }
    // No drift bound: nothing that differs can change a kernel (applyDrift).
    if (s.driftBound <= 0.0) {
        return "only settings that cannot change a kernel differ (" + out + "): no drift allowed";
    }
    return out;
}

} // namespace ttrace
