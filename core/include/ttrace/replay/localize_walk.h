#pragma once
// The localize walk over a diff (docs/localize-json.md): start at the report's first
// divergence in time, replay the divergent modules of that phase in the timeline's order, and
// stop descending into a subtree once its root is judged: an inherited root makes its subtree
// inherited, an introduced root is narrowed down to its introduced children, and only the
// deepest introduced modules are guilty. Pure logic over a DiffResult and a judge callback, so it
// is tested without an agent.
#include "ttrace/compare/diff_result.h"
#include "ttrace/replay/localize_result.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace::replay {

// The walk phase of a timeline phase (one to one) and a tensor's place on the report's
// timeline (timePlaceOf: a diverging `parameter` of iteration I sits at the step of I-1) as a
// walk start.
LocalizePhase localizePhaseOf(Phase phase);
DivergenceStart divergenceStartOf(const TensorId& id);

// The report's first divergence (DiffResult::firstDivergence, what `ttrace diff` and the
// explorer's headline lead with) as a walk start; nothing when the diff is clean. The diff's
// timeline must be built (assembleVerdicts, or a diff read back from JSON).
std::optional<DivergenceStart> firstDivergenceStart(const DiffResult& diff);

// Where the walk replays: the first step on the report's timeline, from the first divergence
// on, with something to replay (a diverging phase output, or any divergence in the gradient
// reduction or the optimizer step). A step where only what it consumed diverges (the data it
// was fed, a forward input or an output gradient alone) has nothing to replay and is passed.
std::optional<DivergenceStart> replayStart(const DiffResult& diff);

// Modules whose phase outputs diverge at `start` (forward: forward_output; backward:
// input_grad, param_grad) in the order of the report's timeline (micro-batch, then execution
// order forward, reverse backward), each with the first micro-batch where it diverges.
std::vector<Suspect> suspectsAt(const DiffResult& diff, const DivergenceStart& start);

// Whether `ancestor` holds `module` in the module tree: `a.b` holds `a.b.c`. Rows of one call
// or recompute hold their own (`shared@call1` holds `shared.fc1@call1`, `layers.1@recompute`
// holds `layers.1.mask@recompute`), never another call's or the module's call 0 rows.
bool isBelow(std::string_view module, std::string_view ancestor);

// Nearest dotted ancestor of `module` among `names` ("" when none), by isBelow.
std::string parentAmong(const std::string& module, const std::vector<std::string>& names);

using JudgeFn = std::function<ModuleVerdict(const Suspect&)>;

struct WalkCallbacks {
    std::function<void(const ModuleVerdict&)> onVerdict; // each verdict as it is reached
    std::function<bool()> cancelled;                     // checked before each replay
};

// The walk from the report's first divergence (LocalizeResult::start), replaying at
// replayStart. `judge` returning a verdict whose reason starts the
// problem list (transport errors) is the caller's business: it may throw ReplayAbort to stop.
LocalizeResult walkDivergence(const DiffResult& diff, const JudgeFn& judge,
                              const WalkCallbacks& callbacks = {});

// Judges the named modules alone: guilty are the introduced ones. A suspect of the gradient
// reduction or the optimizer step is judged by a step replay of its parameters, fed the
// reference's main grads, and worded as the walk words the whole step: still diverging, the
// optimizer step is guilty; agreeing, the gradient reduction is guilty when `diff` shows the
// module's main grad diverging while every param grad it reduced agrees (without a diff, or
// with diverging param grads, the module merely inherited the divergence).
LocalizeResult judgeNamed(const std::vector<Suspect>& suspects, const JudgeFn& judge,
                          const WalkCallbacks& callbacks = {}, const DiffResult* diff = nullptr);

// Whether `diff` blames the gradient reduction for `module`'s main grad at `iteration`: it
// diverges while the param grads it reduced were compared and agree.
bool reductionBlamed(const DiffResult& diff, const std::string& module, std::int64_t iteration);

// Thrown by a judge to stop the walk (agent unreachable, timeouts, bad replies): the walk
// records it in LocalizeResult::problems and returns what it has.
struct ReplayAbort {
    Diagnostic problem;
};

} // namespace ttrace::replay
