#pragma once
// From per-tensor ratios to verdicts: tensor status, module roll-ups in execution order, the
// first divergent module, and the offline "introduced here vs inherited" estimate (see
// docs/tolerance.md, "Verdicts"). Pure functions over results, so they are tested on
// synthetic data and reused on localization results.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/exit_code.h"
#include "ttrace/io/manifest.h"

#include <vector>

namespace ttrace {

// A module introduces a divergence only when its output ratio exceeds this factor times its
// worst input ratio: an inherited error passes through a module at up to ~1.3x its input
// ratio (docs/tolerance.md, "Introduced here or inherited"), so what the inputs cannot explain
// is beyond that with a margin.
inline constexpr double kIntroducedFactor = 10.0;

// error / tolerance; 0 when both are 0; +inf when only the tolerance is 0 (exact comparison).
double toleranceRatio(double error, double tolerance);
// Clean when ratio <= 1, Divergent above (including +inf).
Status verdictFor(double ratio);
// A tensor's status: verdictFor(ratio), except that a ratio over a provisional bound
// (Tolerance::provisional), or over an unstable floor by no more than its variants disagree
// (unstableOverBound), is no confident divergence: Clean, counted apart in the summary.
Status tensorVerdict(double ratio, const Tolerance& tolerance);
// Over a tolerance whose floor is unstable (unstableFloor, tolerance.h) by at most the factor
// its variants disagree by: a floor drawn from other samples could be that much larger, so the
// ratio cannot tell round-off from a bug. Beyond it the divergence is confident.
bool unstableOverBound(double ratio, const Tolerance& tolerance);
// Introduced when the output diverges (ratio > 1) by more than kIntroducedFactor times the
// input ratio (clean inputs included: an output at 1.004 after inputs at 0.98 is explained by
// them); Inherited when the output diverges otherwise; None when the output is clean.
Origin classifyOrigin(double inputRatio, double outputRatio);

// Sorts result.tensors by module execution order, builds result.modules (execution order of
// `modules`; modules the manifest does not list are appended by name), rolls up statuses and
// origins, fills the first divergences and the summary counts. Tensor statuses must be set.
void assembleVerdicts(DiffResult& result, const std::vector<ModuleInfo>& modules);

// The run's verdict in one word, and the exit status of `ttrace diff` and the explorer's
// headless mode: invalid (2) when any tensor is invalid or missing, a bundle has errors or the
// diff was cancelled, even if others diverge; divergent (1) when some tensor diverges and all
// are valid; unresolved (3) when none diverges but some inferred placement stayed ambiguous
// (a clean verdict needs every placement settled); drift (0) when none diverges, every
// placement is settled and some tensors drift (drift.h); clean (0) otherwise.
enum class RunVerdict { Clean, Divergent, Invalid, Unresolved, Drift };
RunVerdict runVerdict(const DiffResult& result);
std::string_view runVerdictName(RunVerdict verdict);
int exitCodeFor(const DiffResult& result);

// Indices of the `count` worst tensors: invalid, then missing ones first, then by descending
// ratio (ties in tensor order). Clean tensors are included, so a clean run still shows its
// closest calls.
std::vector<std::size_t> worstTensors(const DiffResult& result, std::size_t count);

} // namespace ttrace
