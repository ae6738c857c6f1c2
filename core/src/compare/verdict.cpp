#include "ttrace/compare/verdict.h"

#include "compare/timeline.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

namespace ttrace {
namespace {

// The run's verdict word in the diff JSON (`verdict`) and the CLI's summary.
constexpr NameTable kRunVerdictNames{RunVerdict::Drift,
                                     std::array<std::pair<RunVerdict, std::string_view>, 5>{{
                                         {RunVerdict::Clean, "clean"},
                                         {RunVerdict::Divergent, "divergent"},
                                         {RunVerdict::Invalid, "invalid"},
                                         {RunVerdict::Unresolved, "unresolved"},
                                         {RunVerdict::Drift, "drift"},
                                     }}};

constexpr double kInf = std::numeric_limits<double>::infinity();

// A module's work in one iteration happens in causal phases (the timeline's phases); each has
// inputs (what it consumes) and outputs (what it produces). Origin is decided in the first
// phase whose outputs diverge, in the first iteration where the module diverges at all: later
// iterations inherit everything through the updated parameters.
constexpr Phase kPhases[] = {Phase::Forward, Phase::Backward, Phase::GradReduction,
                             Phase::OptimizerStep};

bool isPhaseOutput(Phase phase, TensorKind k) {
    return phaseOf(k) == phase && k != TensorKind::ForwardInput && k != TensorKind::Parameter &&
           k != TensorKind::OutputGrad;
}

// Inputs a module itself holds (parameters also count for every ancestor module).
bool isPhaseInput(Phase phase, TensorKind k) {
    switch (phase) {
    case Phase::Forward: return k == TensorKind::ForwardInput || k == TensorKind::Parameter;
    case Phase::Backward:
        // Backward consumes the output gradient plus the saved activations and weights.
        return k == TensorKind::OutputGrad || k == TensorKind::ForwardInput ||
               k == TensorKind::Parameter;
    case Phase::GradReduction: return k == TensorKind::ParamGrad;
    case Phase::OptimizerStep: return k == TensorKind::MainGrad || k == TensorKind::Parameter;
    }
    return false;
}

bool isGradient(TensorKind k) {
    return k == TensorKind::OutputGrad || k == TensorKind::InputGrad ||
           k == TensorKind::ParamGrad || k == TensorKind::MainGrad;
}

bool isDescendant(const std::string& child, const std::string& parent) {
    return isDescendantModule(child, parent);
}

bool related(const std::string& a, const std::string& b) {
    return a == b || isDescendant(a, b) || isDescendant(b, a);
}

bool compared(const TensorResult& t) {
    return t.status == Status::Clean || t.status == Status::Divergent || t.status == Status::Drift;
}

// Everything the origin logic needs to know about one compared tensor.
struct Entry {
    std::size_t module; // index into result.modules
    std::int64_t iteration;
    TensorKind kind;
    double ratio;
    // Divergent by the clip coefficient alone (a wrong global norm: clip_coefficient.h): the
    // clipping's divergence, which the module inherits.
    bool clipMoved = false;
};

bool movedByClipping(const TensorResult& t) {
    return t.status == Status::Divergent &&
           std::any_of(t.findings.begin(), t.findings.end(), [](const Diagnostic& d) {
               return d.code == DiagnosticCode::ClipCoefficient;
           });
}

class OriginAnalysis {
public:
    explicit OriginAnalysis(const DiffResult& result)
        : result_(result) {
        for (const auto& t : result.tensors) {
            // Drift (drift.h) is no divergence to localize, nor a ratio within an unstable
            // floor's disagreement: a module is blamed for, or inherits, only what is beyond it.
            const bool capped =
                t.status == Status::Drift ||
                (t.status == Status::Clean && unstableOverBound(t.ratio, t.tolerance));
            const double ratio = capped ? std::min(t.ratio, 1.0) : t.ratio;
            const Entry e{moduleIndex(t.id.module), t.id.iteration, t.id.kind, ratio,
                          movedByClipping(t)};
            (compared(t) ? entries_ : uncompared_).push_back(e);
        }
    }

    void classify(ModuleResult& m, std::size_t mi) const {
        std::int64_t firstIter = std::numeric_limits<std::int64_t>::max();
        for (const auto& e : entries_) {
            if (e.module == mi && e.ratio > 1.0) {
                firstIter = std::min(firstIter, e.iteration);
            }
        }
        if (firstIter == std::numeric_limits<std::int64_t>::max()) {
            // Clean: show the forward picture over all iterations.
            m.inputRatio = maxOf(mi, std::nullopt, Phase::Forward, false);
            m.outputRatio = maxOf(mi, std::nullopt, Phase::Forward, true);
            m.origin = Origin::None;
            return;
        }
        for (const Phase phase : kPhases) {
            const double out = maxOf(mi, firstIter, phase, true);
            if (out <= 1.0) {
                continue;
            }
            m.outputRatio = out;
            m.inputRatio = inputRatio(mi, firstIter, phase);
            m.origin = classifyOrigin(m.inputRatio, m.outputRatio);
            // Only the clip coefficient moved what the step wrote: inherited from the clipping.
            if (m.origin == Origin::Introduced && ownOutputRatio(mi, firstIter, phase) <= 1.0) {
                m.origin = Origin::Inherited;
            }
            if (phase == Phase::Backward && m.origin == Origin::Inherited &&
                seedsBackward(mi, firstIter)) {
                m.origin = Origin::Introduced;
            }
            // Neither blamed nor cleared on evidence that could not be compared.
            if (m.origin != Origin::None && evidenceIncomplete(mi, firstIter, phase)) {
                m.origin = Origin::Undetermined;
            }
            return;
        }
        // Only inputs diverge: the divergence arrived from elsewhere.
        m.inputRatio = maxOf(mi, firstIter, Phase::Forward, false);
        m.outputRatio = maxOf(mi, firstIter, Phase::Forward, true);
        m.origin = Origin::Inherited;
    }

private:
    std::size_t moduleIndex(const std::string& name) const {
        for (std::size_t i = 0; i < result_.modules.size(); ++i) {
            if (result_.modules[i].name == name) {
                return i;
            }
        }
        return result_.modules.size();
    }

    const std::string& name(std::size_t mi) const { return result_.modules[mi].name; }

    // Something the module could have consumed up to `phase` of `iter` was not compared
    // (invalid or missing): its own or its submodules' tensors, the forward of modules that ran
    // before it, and, backwards, the whole forward (the loss seeds the backward) and the
    // gradients of modules after it. A missing partial sum looks like a divergence, so such a
    // module is never said to introduce one.
    bool evidenceIncomplete(std::size_t mi, std::int64_t iter, Phase phase) const {
        for (const auto& e : uncompared_) {
            if (e.iteration != iter || e.module >= result_.modules.size() ||
                phaseOf(e.kind) > phase) {
                continue;
            }
            const bool own = e.module == mi || isDescendant(name(e.module), name(mi));
            const bool earlierForward = phaseOf(e.kind) == Phase::Forward &&
                                        (phase != Phase::Forward || order(e.module) < order(mi));
            const bool laterBackward = phase == Phase::Backward &&
                                       phaseOf(e.kind) == Phase::Backward &&
                                       order(e.module) > order(mi);
            if (own || (phase <= Phase::Backward && (earlierForward || laterBackward))) {
                return true;
            }
        }
        return false;
    }

    // The backward's seed is wrong: the module runs last (no module after it has gradients),
    // its own output gradient diverges and its forward outputs do not. No module produced
    // that gradient, so the divergence enters here (e.g. a loss scaled by the schedule).
    bool seedsBackward(std::size_t mi, std::int64_t iter) const {
        bool ownSeedDiverges = false;
        for (const auto& e : entries_) {
            if (e.iteration != iter || e.module >= result_.modules.size()) {
                continue;
            }
            if (e.module == mi && e.kind == TensorKind::OutputGrad) {
                ownSeedDiverges = ownSeedDiverges || e.ratio > 1.0;
            } else if (isGradient(e.kind) && order(e.module) > order(mi)) {
                return false;
            }
        }
        return ownSeedDiverges && maxOf(mi, iter, Phase::Forward, true) <= 1.0;
    }
    int order(std::size_t mi) const { return result_.modules[mi].order; }

    // The worst output of the phase that the clip coefficient alone does not explain.
    double ownOutputRatio(std::size_t mi, std::int64_t iter, Phase phase) const {
        double worst = 0.0;
        for (const auto& e : entries_) {
            if (e.module == mi && e.iteration == iter && !e.clipMoved &&
                isPhaseOutput(phase, e.kind)) {
                worst = std::max(worst, e.ratio);
            }
        }
        return worst;
    }

    double maxOf(std::size_t mi, std::optional<std::int64_t> iter, Phase phase,
                 bool outputs) const {
        double worst = 0.0;
        for (const auto& e : entries_) {
            if (iter && e.iteration != *iter) {
                continue;
            }
            const bool own = e.module == mi;
            const bool match = outputs ? own && isPhaseOutput(phase, e.kind)
                                       : isPhaseInput(phase, e.kind) &&
                                             (own || (e.kind == TensorKind::Parameter &&
                                                      e.module < result_.modules.size() &&
                                                      isDescendant(name(e.module), name(mi))));
            if (match) {
                worst = std::max(worst, e.ratio);
            }
        }
        return worst;
    }

    // Worst ratio among what the phase consumed. When the module's own activation input was
    // not captured (nested modules usually are not), the nearest evidence stands in: outputs
    // of unrelated modules that ran before it (forward) or gradients of modules after it
    // (backward, which runs in reverse order), in the same iteration.
    double inputRatio(std::size_t mi, std::int64_t iter, Phase phase) const {
        double worst = maxOf(mi, iter, phase, false);
        const TensorKind primary =
            phase == Phase::Forward ? TensorKind::ForwardInput : TensorKind::OutputGrad;
        bool captured = phase == Phase::GradReduction || phase == Phase::OptimizerStep;
        for (const auto& e : entries_) {
            captured = captured || (e.module == mi && e.iteration == iter && e.kind == primary);
        }
        if (captured) {
            return worst;
        }
        for (const auto& e : entries_) {
            if (e.iteration != iter || e.module >= result_.modules.size() ||
                related(name(e.module), name(mi))) {
                continue;
            }
            const bool before = order(e.module) < order(mi);
            if (phase == Phase::Forward && before && e.kind == TensorKind::ForwardOutput) {
                worst = std::max(worst, e.ratio);
            } else if (phase == Phase::Backward && !before && isGradient(e.kind) &&
                       e.kind != TensorKind::MainGrad) {
                worst = std::max(worst, e.ratio);
            }
        }
        if (phase == Phase::Backward) {
            // Backward also consumes what the module's forward produced.
            worst = std::max(worst, maxOf(mi, iter, Phase::Forward, true));
        }
        return worst;
    }

    const DiffResult& result_;
    std::vector<Entry> entries_;
    std::vector<Entry> uncompared_; // invalid or missing tensors (ratio meaningless)
};

ModuleResult moduleEntry(const std::string& name, const std::string& type, int order, int depth) {
    ModuleResult m;
    m.name = name;
    m.type = type;
    m.order = order;
    m.depth = depth;
    return m;
}

} // namespace

double toleranceRatio(double error, double tolerance) {
    if (error == 0.0) {
        return 0.0;
    }
    if (!(tolerance > 0.0)) {
        return kInf;
    }
    return error / tolerance; // +inf error stays +inf
}

Status verdictFor(double ratio) {
    return ratio <= 1.0 ? Status::Clean : Status::Divergent;
}

bool unstableOverBound(double ratio, const Tolerance& tolerance) {
    return unstableFloor(tolerance) && ratio > 1.0 && ratio <= tolerance.floorDisagreement;
}

Status tensorVerdict(double ratio, const Tolerance& tolerance) {
    if (tolerance.provisional != Provisional::None || unstableOverBound(ratio, tolerance)) {
        return Status::Clean;
    }
    return verdictFor(ratio);
}

Origin classifyOrigin(double inputRatio, double outputRatio) {
    if (outputRatio <= 1.0) {
        return Origin::None;
    }
    if (outputRatio > kIntroducedFactor * inputRatio) {
        return Origin::Introduced;
    }
    return Origin::Inherited;
}

namespace {

using ModuleIndex = std::map<std::string, std::size_t>;

// The module table: the manifest's execution order, then any module only the tensors name.
ModuleIndex buildModuleTable(DiffResult& result, const std::vector<ModuleInfo>& modules) {
    result.modules.clear();
    ModuleIndex index;
    for (const auto& info : modules) {
        if (index.emplace(info.name, result.modules.size()).second) {
            result.modules.push_back(moduleEntry(info.name, info.type, info.order, info.depth));
        }
    }
    std::set<std::string> extra;
    for (const auto& t : result.tensors) {
        if (!index.contains(t.id.module)) {
            extra.insert(t.id.module);
        }
    }
    int nextOrder = modules.empty() ? 0 : modules.back().order + 1;
    for (const auto& name : extra) {
        index.emplace(name, result.modules.size());
        result.modules.push_back(moduleEntry(name, "", nextOrder++, 0));
    }
    std::stable_sort(
        result.modules.begin(), result.modules.end(),
        [](const ModuleResult& a, const ModuleResult& b) { return a.order < b.order; });
    for (std::size_t i = 0; i < result.modules.size(); ++i) {
        index[result.modules[i].name] = i;
    }
    return index;
}

void resetCounts(DiffSummary& s) {
    s.compared = s.divergent = s.missing = s.invalid = s.structural = s.unresolved = 0;
    s.provisional = s.provisionalOverBound = s.drift = 0;
    s.unstableFloors = s.unstableOverBound = 0;
    s.maxRatio = s.provisionalMaxRatio = s.driftMaxRatio = s.unstableMaxRatio = 0.0;
}

// Counts one compared tensor (clean, divergent or drift) into the run and its module.
void countCompared(DiffSummary& s, ModuleResult& m, const TensorResult& t) {
    ++s.compared;
    if (t.tolerance.provisional != Provisional::None) {
        ++s.provisional;
        s.provisionalOverBound += t.ratio > 1.0 ? 1 : 0;
        s.provisionalMaxRatio = std::max(s.provisionalMaxRatio, t.ratio);
        return; // no confident ratio: kept out of the run's and the module's maximum
    }
    s.unstableFloors += unstableFloor(t.tolerance) ? 1 : 0;
    if (t.status != Status::Divergent && unstableOverBound(t.ratio, t.tolerance)) {
        ++s.unstableOverBound;
        s.unstableMaxRatio = std::max(s.unstableMaxRatio, t.ratio);
        return; // likewise: its floor is too uncertain for a confident ratio
    }
    s.maxRatio = std::max(s.maxRatio, t.ratio);
    m.maxRatio = std::max(m.maxRatio, t.ratio);
    s.divergent += t.status == Status::Divergent ? 1 : 0;
    if (t.status == Status::Drift) {
        ++s.drift;
        s.driftMaxRatio = std::max(s.driftMaxRatio, t.ratio);
    }
    s.structural += t.structure != StructuralChange::None ? 1 : 0;
}

void countTensors(DiffResult& result, const ModuleIndex& index) {
    DiffSummary& s = result.summary;
    resetCounts(s);
    for (std::size_t i = 0; i < result.tensors.size(); ++i) {
        const auto& t = result.tensors[i];
        auto& m = result.modules[index.at(t.id.module)];
        m.tensors.push_back(i);
        switch (t.status) {
        case Status::Clean:
        case Status::Divergent:
        case Status::Drift: countCompared(s, m, t); break;
        case Status::Missing: ++s.missing; break;
        case Status::Invalid: ++s.invalid; break;
        case Status::Unresolved: ++s.unresolved; break;
        }
    }
}

} // namespace

void assembleVerdicts(DiffResult& result, const std::vector<ModuleInfo>& modules) {
    const auto index = buildModuleTable(result, modules);
    std::sort(result.tensors.begin(), result.tensors.end(),
              [&](const TensorResult& a, const TensorResult& b) {
                  const auto oa = index.at(a.id.module);
                  const auto ob = index.at(b.id.module);
                  return oa != ob ? oa < ob : a.id < b.id;
              });
    countTensors(result, index);
    // A module is as bad as its worst tensor, in the one severity order.
    for (auto& m : result.modules) {
        m.status = Status::Clean;
        for (const auto i : m.tensors) {
            if (severity(result.tensors[i].status) > severity(m.status)) {
                m.status = result.tensors[i].status;
            }
        }
    }
    const OriginAnalysis analysis(result);
    for (std::size_t i = 0; i < result.modules.size(); ++i) {
        analysis.classify(result.modules[i], i);
    }
    buildTimeline(result);
    const DiffSummary& s = result.summary;
    result.summary.clean = s.divergent == 0 && s.invalid == 0 && s.missing == 0 &&
                           s.unresolved == 0 && !hasErrors(result.diagnostics);
}

std::vector<std::size_t> worstTensors(const DiffResult& result, std::size_t count) {
    std::vector<std::size_t> order(result.tensors.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    // What cannot be compared comes first (severity order), then the worst ratios.
    auto key = [&](std::size_t i) {
        const auto& t = result.tensors[i];
        const int uncomparable =
            severity(t.status) > severity(Status::Divergent) ? severity(t.status) : 0;
        return std::make_pair(uncomparable, t.ratio);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return key(a) > key(b); });
    order.resize(std::min(order.size(), count));
    return order;
}

} // namespace ttrace

namespace ttrace {

RunVerdict runVerdict(const DiffResult& r) {
    const auto& s = r.summary;
    if (r.cancelled || s.invalid > 0 || s.missing > 0 || hasErrors(r.diagnostics) ||
        (r.tensors.empty() && !s.clean)) {
        return RunVerdict::Invalid;
    }
    if (s.divergent > 0) {
        return RunVerdict::Divergent;
    }
    const bool provisionalOver = s.provisionalOverBound > 0 || s.unstableOverBound > 0;
    if (s.drift > 0 && s.unresolved == 0 && !provisionalOver) {
        return RunVerdict::Drift;
    }
    // Not clean, not divergent: placements no evidence settles, or tensors that only a
    // provisional analytic bound judges and that exceed it (a reference without variants
    // cannot tell their round-off from a bug), or that exceed an unstable floor by less than
    // its variants disagree (too few variants to tell).
    return s.unresolved > 0 || provisionalOver ? RunVerdict::Unresolved : RunVerdict::Clean;
}

std::string_view runVerdictName(RunVerdict verdict) {
    return kRunVerdictNames.name(verdict);
}

int exitCodeFor(const DiffResult& result) {
    switch (runVerdict(result)) {
    case RunVerdict::Clean: return exitStatus(ExitCode::Ok);
    // Drift is no bug: a pipeline that gates on the exit status passes a kernel upgrade.
    case RunVerdict::Drift: return exitStatus(ExitCode::Ok);
    case RunVerdict::Divergent: return exitStatus(ExitCode::Divergent);
    case RunVerdict::Invalid: return exitStatus(ExitCode::BadInput);
    case RunVerdict::Unresolved: return exitStatus(ExitCode::Unresolved);
    }
    return exitStatus(ExitCode::BadInput);
}

} // namespace ttrace
