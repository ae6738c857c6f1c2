#pragma once
// Gradient clipping multiplies every gradient of a step by one coefficient from the global
// norm. When both bundles recorded it (the manifests' gradient_clipping) and the candidate's
// differs from the reference's, every main gradient and optimizer state of that step moves by
// the ratio f (exp_avg_sq and other squared states by f^2). If the candidate's norm is its own
// clipped gradients' norm within the round-off the reference's own norm shows, the factor is
// legitimate (the norm's round-off, or a gradient's own divergence spread over every other one
// by the clip): each tensor of the step is judged after it, and those within their tolerance
// then are "moved by the clip coefficient". The parameters after an Adam step are not scaled by
// f (the update is scale-free) except through eps where a gradient is tiny: each is judged
// against the reference's step re-evaluated element by element at f times its gradient. A norm that
// is not its gradients' (it misses or double-counts some) is never excused: its tensors keep their
// verdicts and the step's comparison says so. Private to core.
#include "compare/tensor_comparison.h"
#include "ttrace/compare/diff_result.h"

namespace ttrace {

// Fills result.clipping and re-judges the step tensors the factor explains. Call before
// assembleVerdicts.
// `context` gives both bundles, whose step tensors are re-read element by element for the
// parameters after an Adam step; without it those keep their verdicts.
void judgeClipCoefficient(DiffResult& result, const Manifest& reference, const Manifest& candidate,
                          const ComparisonContext* context = nullptr);

} // namespace ttrace
