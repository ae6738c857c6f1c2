#include "ttrace/replay/localize_walk.h"

#include "ttrace/replay/divergence_entry.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
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
        return kind == TensorKind::ParamAfterStep || kind == TensorKind::OptimizerState;
    }
    return false;
}

std::map<std::string, int> moduleOrder(const DiffResult& diff) {
    std::map<std::string, int> order;
    for (const auto& m : diff.modules) {
        order[m.name] = m.order;
    }
    return order;
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
            if (abort.problem.code == "cancelled") {
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
    for (const auto& t : diff.tensors) {
        if (t.id.iteration == start.iteration && isPhaseOutput(start.phase, t.id.kind)) {
            s.diffRatio = std::max(s.diffRatio, t.ratio);
        }
    }
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

DivergenceStart phaseOf(const TensorId& id) {
    switch (id.kind) {
    case TensorKind::ForwardInput:
    case TensorKind::ForwardOutput: return {id.iteration, LocalizePhase::Forward};
    case TensorKind::OutputGrad:
    case TensorKind::InputGrad:
    case TensorKind::ParamGrad: return {id.iteration, LocalizePhase::Backward};
    case TensorKind::MainGrad: return {id.iteration, LocalizePhase::Reduction};
    case TensorKind::Parameter: return {id.iteration - 1, LocalizePhase::Step};
    case TensorKind::ParamAfterStep:
    case TensorKind::OptimizerState: return {id.iteration, LocalizePhase::Step};
    }
    return {id.iteration, LocalizePhase::Forward};
}

std::optional<DivergenceStart> firstDivergence(const DiffResult& diff) {
    std::optional<DivergenceStart> first;
    for (const auto& t : diff.tensors) {
        // What a phase consumes (forward inputs, output gradients) diverges only because
        // something produced it wrong, or because the job was fed other data: the walk starts
        // where something was produced wrong.
        const bool consumed =
            t.id.kind == TensorKind::ForwardInput || t.id.kind == TensorKind::OutputGrad;
        if (t.status == Status::Divergent && !consumed) {
            const auto p = phaseOf(t.id);
            if (!first || p < *first) {
                first = p;
            }
        }
    }
    return first;
}

std::vector<Suspect> suspectsAt(const DiffResult& diff, const DivergenceStart& start) {
    std::map<std::string, Suspect> byModule;
    for (const auto& t : diff.tensors) {
        if (t.status != Status::Divergent || t.id.iteration != start.iteration ||
            !isPhaseOutput(start.phase, t.id.kind)) {
            continue;
        }
        auto [it, fresh] = byModule.try_emplace(t.id.module);
        auto& s = it->second;
        if (fresh) {
            s = {t.id.module, start.iteration, t.id.microBatch, start.phase, t.ratio};
        }
        s.microBatch = std::min(s.microBatch, t.id.microBatch);
        s.diffRatio = std::max(s.diffRatio, t.ratio);
    }
    const auto order = moduleOrder(diff);
    auto rank = [&](const std::string& name) {
        const auto it = order.find(name);
        return it == order.end() ? std::numeric_limits<int>::max() : it->second;
    };
    std::vector<Suspect> out;
    for (auto& [name, s] : byModule) {
        out.push_back(std::move(s));
    }
    const bool reverse = start.phase == LocalizePhase::Backward; // gradients flow from the loss
    std::stable_sort(out.begin(), out.end(), [&](const Suspect& a, const Suspect& b) {
        return reverse ? rank(a.module) > rank(b.module) : rank(a.module) < rank(b.module);
    });
    return out;
}

std::string parentAmong(const std::string& module, const std::vector<std::string>& names) {
    std::string best;
    for (const auto& n : names) {
        const bool ancestor =
            module.size() > n.size() + 1 && module.starts_with(n) && module[n.size()] == '.';
        if (ancestor && n.size() > best.size()) {
            best = n;
        }
    }
    return best;
}

LocalizeResult walkDivergence(const DiffResult& diff, const JudgeFn& judge,
                              const WalkCallbacks& callbacks) {
    const auto t0 = std::chrono::steady_clock::now();
    LocalizeResult result;
    result.start = firstDivergence(diff);
    Walker walker(judge, callbacks, result);
    if (result.start && (result.start->phase == LocalizePhase::Reduction ||
                         result.start->phase == LocalizePhase::Step)) {
        walkOptimizer(diff, *result.start, walker, result);
    } else if (result.start) {
        const auto suspects = suspectsAt(diff, *result.start);
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

LocalizeResult judgeNamed(const std::vector<Suspect>& suspects, const JudgeFn& judge,
                          const WalkCallbacks& callbacks) {
    const auto t0 = std::chrono::steady_clock::now();
    LocalizeResult result;
    Walker walker(judge, callbacks, result);
    for (const auto& s : suspects) {
        ModuleVerdict v;
        if (!walker.judge(s, 0, v)) {
            break;
        }
        if (v.verdict == Verdict::Introduced) {
            result.guilty.push_back(s.module);
        }
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

} // namespace ttrace::replay
