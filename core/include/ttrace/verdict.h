#pragma once
// From per-tensor ratios to verdicts: tensor status, module roll-ups in execution order, the
// first divergent module, and the offline "introduced here vs inherited" estimate (see
// docs/tolerance.md, "Verdicts"). Pure functions over results, so they are tested on
// synthetic data and reused on localization results.
#include "ttrace/diff_result.h"
#include "ttrace/manifest.h"

#include <vector>

namespace ttrace {

// A module's output ratio must exceed its worst input ratio by this factor before a module
// whose inputs already diverge is said to introduce (rather than inherit) the divergence.
inline constexpr double kIntroducedFactor = 10.0;

// error / tolerance; 0 when both are 0; +inf when only the tolerance is 0 (exact comparison).
double toleranceRatio(double error, double tolerance);
// Clean when ratio <= 1, Divergent above (including +inf).
Status verdictFor(double ratio);
// Introduced when the output diverges and the inputs are clean, or the output ratio exceeds
// kIntroducedFactor times the input ratio; Inherited when the output diverges otherwise; None
// when the output is clean.
Origin classifyOrigin(double inputRatio, double outputRatio);

// Sorts result.tensors by module execution order, builds result.modules (execution order of
// `modules`; modules the manifest does not list are appended by name), rolls up statuses and
// origins, fills the first divergences and the summary counts. Tensor statuses must be set.
void assembleVerdicts(DiffResult& result, const std::vector<ModuleInfo>& modules);

// Indices of the `count` worst tensors: invalid ones first, then by descending ratio (ties in
// tensor order). Clean tensors are included, so a clean run still shows its closest calls.
std::vector<std::size_t> worstTensors(const DiffResult& result, std::size_t count);

} // namespace ttrace
