#pragma once
// The localize walk over a diff (docs/localize-json.md): find the first divergence in time,
// replay the divergent modules of that phase in causal order, and stop descending into a
// subtree once its root is judged: an inherited root makes its subtree inherited, an introduced
// root is narrowed down to its introduced children, and only the deepest introduced modules
// are guilty. Pure logic over a DiffResult and a judge callback, so it is tested without an
// agent.
#include "ttrace/diff_result.h"
#include "ttrace/replay/localize_result.h"

#include <functional>
#include <optional>
#include <vector>

namespace ttrace::replay {

// The phase a tensor kind belongs to, and the iteration it belongs to (a diverging `parameter`
// of iteration I is the state the step of I-1 left).
DivergenceStart phaseOf(const TensorId& id);

// The earliest (iteration, phase) with a divergent tensor; nothing when the diff is clean.
std::optional<DivergenceStart> firstDivergence(const DiffResult& diff);

// Modules whose phase outputs diverge at `start` (forward: forward_output; backward:
// input_grad, param_grad), in causal order: execution order forward, reverse backward. Each
// with the first micro-batch where it diverges.
std::vector<Suspect> suspectsAt(const DiffResult& diff, const DivergenceStart& start);

// Nearest dotted ancestor of `module` among `names` ("" when none).
std::string parentAmong(const std::string& module, const std::vector<std::string>& names);

using JudgeFn = std::function<ModuleVerdict(const Suspect&)>;

struct WalkCallbacks {
    std::function<void(const ModuleVerdict&)> onVerdict; // each verdict as it is reached
    std::function<bool()> cancelled;                     // checked before each replay
};

// The walk from the first divergence. `judge` returning a verdict whose reason starts the
// problem list (transport errors) is the caller's business: it may throw ReplayAbort to stop.
LocalizeResult walkDivergence(const DiffResult& diff, const JudgeFn& judge,
                              const WalkCallbacks& callbacks = {});

// Judges the named modules alone (no diff): guilty are the introduced ones.
LocalizeResult judgeNamed(const std::vector<Suspect>& suspects, const JudgeFn& judge,
                          const WalkCallbacks& callbacks = {});

// Thrown by a judge to stop the walk (agent unreachable, timeouts, bad replies): the walk
// records it in LocalizeResult::problems and returns what it has.
struct ReplayAbort {
    Diagnostic problem;
};

} // namespace ttrace::replay
