#include "ttrace/replay/localize_walk.h"

#include "ttrace/io/time_place.h"
#include "ttrace/replay/divergence_entry.h"

#include <algorithm>
#include <chrono>
#include <set>

namespace ttrace::replay {
namespace {

bool isPhaseOutput(LocalizePhase phase, TensorKind kind) {
    switch (phase) {
    case LocalizePhase::Forward: return kind == TensorKind::ForwardOutput;
    case LocalizePhase::Backward:
        return kind == TensorKind::InputGrad || kind == TensorKind::ParamGrad;
    case LocalizePhase::Reduction: return kind == TensorKind::MainGrad;
    case LocalizePhase::Step:
        // A parameter of the next iteration is what the step wrote (timePlaceOf).
        return kind == TensorKind::ParamAfterStep || kind == TensorKind::OptimizerState ||
               kind == TensorKind::Parameter;
    }
    return false;
}

// The report's timeline, divergent tensors only, in time order.
template <typename Visit> void forEachDivergentInTime(const DiffResult& diff, Visit visit) {
    for (const auto i : diff.timeline) {
        if (i < diff.tensors.size() && diff.tensors[i].status == Status::Divergent) {
            visit(diff.tensors[i]);
        }
    }
}

bool isOptimizerPhase(LocalizePhase phase) {
    return phase == LocalizePhase::Reduction || phase == LocalizePhase::Step;
}

class Walker {
public:
    Walker(const JudgeFn& judge, const WalkCallbacks& callbacks, LocalizeResult& result)
        : judge_(judge)
        , callbacks_(callbacks)
        , result_(result) {}

    // Judges one suspect; false once the walk must stop (cancelled or aborted).
    bool judge(const Suspect& s, int level, ModuleVerdict& out) {
        if (callbacks_.cancelled && callbacks_.cancelled()) {
            result_.cancelled = true;
            return false;
        }
        try {
            out = judge_(s);
        } catch (const ReplayAbort& abort) {
            if (abort.problem.code == DiagnosticCode::Cancelled) {
                result_.cancelled = true; // the caller's cancel token ended the replay in flight
            } else {
                result_.problems.push_back(abort.problem);
            }
            return false;
        }
        out.suspect = s;
        out.level = level;
        result_.verdicts.push_back(out);
        if (callbacks_.onVerdict) {
            callbacks_.onVerdict(out);
        }
        return true;
    }

    // Returns the guilty modules of the subtree rooted at suspects[i]; `stopped` once aborted.
    std::vector<std::string> subtree(const std::vector<Suspect>& suspects,
                                     const std::vector<std::string>& names, std::size_t i,
                                     int level, bool& stopped) {
        ModuleVerdict v;
        if (!judge(suspects[i], level, v)) {
            stopped = true;
            return {};
        }
        if (v.verdict == Verdict::Inherited) {
            return {}; // the whole subtree only passes on what it was given
        }
        std::vector<std::string> guilty;
        for (std::size_t c = 0; c < suspects.size() && !stopped; ++c) {
            if (parentAmong(names[c], names) == names[i]) {
                auto below = subtree(suspects, names, c, level + 1, stopped);
                guilty.insert(guilty.end(), below.begin(), below.end());
            }
        }
        if (v.verdict == Verdict::Introduced && guilty.empty()) {
            guilty.push_back(names[i]); // no child introduces it: the module's own code does
        }
        return guilty;
    }

private:
    const JudgeFn& judge_;
    const WalkCallbacks& callbacks_;
    LocalizeResult& result_;
};

// Gradient reduction or optimizer step: one replay of the step over every parameter, fed the
// reference's main_grad, parameters and state.
void walkOptimizer(const DiffResult& diff, const DivergenceStart& start, Walker& walker,
                   LocalizeResult& result) {
    Suspect s;
    s.iteration = start.iteration;
    s.microBatch = -1;
    s.phase = LocalizePhase::Step; // what is replayed; start.phase says what is suspected
    forEachDivergentInTime(diff, [&](const TensorResult& t) {
        if (divergenceStartOf(t.id) == start && isPhaseOutput(start.phase, t.id.kind)) {
            s.diffRatio = std::max(s.diffRatio, t.ratio);
        }
    });
    ModuleVerdict v;
    if (!walker.judge(s, 0, v)) {
        return;
    }
    std::set<std::string> modules;
    if (v.verdict == Verdict::Introduced) {
        result.guiltyPhase = LocalizePhase::Step;
        for (const auto& t : v.judgement.tensors) {
            if (t.status == Status::Divergent) {
                modules.insert(t.id.module);
            }
        }
    } else if (v.verdict == Verdict::Inherited && start.phase == LocalizePhase::Reduction) {
        // The step is right given the reference's main_grad: the main_grad the candidate fed it
        // was wrong although every param_grad before it agreed.
        result.guiltyPhase = LocalizePhase::Reduction;
        for (const auto& t : diff.tensors) {
            if (t.status == Status::Divergent && t.id.kind == TensorKind::MainGrad &&
                t.id.iteration == start.iteration) {
                modules.insert(t.id.module);
            }
        }
    }
    result.guiltyParameters.assign(modules.begin(), modules.end());
}

// The clipped step whose coefficient can have moved what diverges first: the start's own
// iteration's (a divergence from its gradient reduction or step), else the iteration before.
std::optional<ClipComparison> clippingBefore(const DiffResult& diff,
                                             const std::optional<DivergenceStart>& start) {
    if (!start) {
        return std::nullopt;
    }
    const bool ownStep =
        start->phase == LocalizePhase::Reduction || start->phase == LocalizePhase::Step;
    const auto iteration = ownStep ? start->iteration : start->iteration - 1;
    for (const auto& c : diff.clipping) {
        if (c.iteration == iteration) {
            return c;
        }
    }
    return std::nullopt;
}

} // namespace

std::string_view localizePhaseName(LocalizePhase phase) {
    switch (phase) {
    case LocalizePhase::Forward: return "forward";
    case LocalizePhase::Backward: return "backward";
    case LocalizePhase::Reduction: return "gradient reduction";
    case LocalizePhase::Step: return "optimizer step";
    }
    return "forward";
}

std::string_view verdictName(Verdict verdict) {
    switch (verdict) {
    case Verdict::Introduced: return "introduced";
    case Verdict::Inherited: return "inherited";
    case Verdict::NotReplayable: return "not replayable";
    }
    return "not replayable";
}

LocalizePhase localizePhaseOf(Phase phase) {
    switch (phase) {
    case Phase::Forward: return LocalizePhase::Forward;
    case Phase::Backward: return LocalizePhase::Backward;
    case Phase::GradReduction: return LocalizePhase::Reduction;
    case Phase::OptimizerStep: return LocalizePhase::Step;
    }
    return LocalizePhase::Forward;
}

DivergenceStart divergenceStartOf(const TensorId& id) {
    const TimePlace at = timePlaceOf(id);
    return {at.iteration, localizePhaseOf(at.phase)};
}

std::optional<DivergenceStart> firstDivergenceStart(const DiffResult& diff) {
    if (!diff.firstDivergence) {
        return std::nullopt;
    }
    return DivergenceStart{diff.firstDivergence->iteration,
                           localizePhaseOf(diff.firstDivergence->phase)};
}

std::optional<DivergenceStart> replayStart(const DiffResult& diff) {
    const auto first = firstDivergenceStart(diff);
    std::optional<DivergenceStart> at;
    forEachDivergentInTime(diff, [&](const TensorResult& t) {
        const auto p = divergenceStartOf(t.id);
        if (!at && first && !(p < *first) &&
            (isOptimizerPhase(p.phase) || isPhaseOutput(p.phase, t.id.kind))) {
            at = p;
        }
    });
    return at;
}

std::vector<Suspect> suspectsAt(const DiffResult& diff, const DivergenceStart& start) {
    std::vector<Suspect> out; // in the order of the report's timeline
    forEachDivergentInTime(diff, [&](const TensorResult& t) {
        if (divergenceStartOf(t.id) != start || !isPhaseOutput(start.phase, t.id.kind)) {
            return;
        }
        const auto it = std::find_if(out.begin(), out.end(),
                                     [&](const Suspect& s) { return s.module == t.id.module; });
        if (it == out.end()) {
            out.push_back({t.id.module, start.iteration, t.id.microBatch, start.phase, t.ratio});
            return;
        }
        it->microBatch = std::min(it->microBatch, t.id.microBatch);
        it->diffRatio = std::max(it->diffRatio, t.ratio);
    });
    return out;
}

bool isBelow(std::string_view module, std::string_view ancestor) {
    // A row's suffix (`@call<k>`, `@recompute`, `@handoff`) follows its module's dotted name.
    const auto split = [](std::string_view name) {
        const auto at = name.find('@');
        return at == std::string_view::npos ? std::pair{name, std::string_view{}}
                                            : std::pair{name.substr(0, at), name.substr(at)};
    };
    const auto [base, suffix] = split(module);
    const auto [above, aboveSuffix] = split(ancestor);
    return suffix == aboveSuffix && base.size() > above.size() + 1 && base.starts_with(above) &&
           base[above.size()] == '.';
}

std::string parentAmong(const std::string& module, const std::vector<std::string>& names) {
    std::string best;
    for (const auto& n : names) {
        if (isBelow(module, n) && n.size() > best.size()) {
            best = n;
        }
    }
    return best;
}

LocalizeResult walkDivergence(const DiffResult& diff, const JudgeFn& judge,
                              const WalkCallbacks& callbacks) {
    const auto t0 = std::chrono::steady_clock::now();
    LocalizeResult result;
    result.start = firstDivergenceStart(diff);
    result.clipping = clippingBefore(diff, result.start);
    const auto at = replayStart(diff);
    Walker walker(judge, callbacks, result);
    if (at && isOptimizerPhase(at->phase)) {
        walkOptimizer(diff, *at, walker, result);
    } else if (at) {
        const auto suspects = suspectsAt(diff, *at);
        std::vector<std::string> names;
        for (const auto& s : suspects) {
            names.push_back(s.module);
        }
        bool stopped = false;
        for (std::size_t i = 0; i < suspects.size() && !stopped; ++i) {
            if (parentAmong(names[i], names).empty()) {
                auto guilty = walker.subtree(suspects, names, i, 0, stopped);
                result.guilty.insert(result.guilty.end(), guilty.begin(), guilty.end());
            }
        }
        result.entry = divergenceEntry(diff, result);
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

bool reductionBlamed(const DiffResult& diff, const std::string& module, std::int64_t iteration) {
    bool mainGradDiverges = false;
    bool paramGradsAgree = false;
    for (const auto& t : diff.tensors) {
        if (t.id.module != module || t.id.iteration != iteration) {
            continue;
        }
        if (t.id.kind == TensorKind::MainGrad && t.status == Status::Divergent) {
            mainGradDiverges = true;
        } else if (t.id.kind == TensorKind::ParamGrad) {
            if (t.status != Status::Clean) {
                return false; // diverging (or uncompared) inputs: nothing proves the reduction
            }
            paramGradsAgree = true;
        }
    }
    return mainGradDiverges && paramGradsAgree;
}

LocalizeResult judgeNamed(const std::vector<Suspect>& suspects, const JudgeFn& judge,
                          const WalkCallbacks& callbacks, const DiffResult* diff) {
    const auto t0 = std::chrono::steady_clock::now();
    LocalizeResult result;
    Walker walker(judge, callbacks, result);
    const auto blame = [&result](LocalizePhase phase, const std::string& module) {
        if (!result.guiltyPhase || phase == LocalizePhase::Step) {
            result.guiltyPhase = phase; // a wrong step outranks the reduction that fed it
        }
        result.guiltyParameters.push_back(module);
    };
    for (const auto& s : suspects) {
        ModuleVerdict v;
        if (!walker.judge(s, 0, v)) {
            break;
        }
        if (!isOptimizerPhase(s.phase)) {
            if (v.verdict == Verdict::Introduced) {
                result.guilty.push_back(s.module);
            }
        } else if (v.verdict == Verdict::Introduced) {
            blame(LocalizePhase::Step, s.module);
        } else if (v.verdict == Verdict::Inherited && s.phase == LocalizePhase::Reduction && diff &&
                   reductionBlamed(*diff, s.module, s.iteration)) {
            blame(LocalizePhase::Reduction, s.module);
        }
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

} // namespace ttrace::replay
