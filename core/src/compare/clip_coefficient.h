#pragma once
// Gradient clipping multiplies every gradient of a step by one coefficient from the global
// norm. When both bundles recorded it (the manifests' gradient_clipping) and the candidate's
// differs from the reference's, every main gradient and optimizer state of that step moves by
// the ratio f (exp_avg_sq and other squared states by f^2). If the candidate's norm is its own
// clipped gradients' norm within the round-off the reference's own norm shows, the factor is
// legitimate (the norm's round-off, or a gradient's own divergence spread over every other one
// by the clip): each tensor of the step is judged after it, and those within their tolerance
// then are "moved by the clip coefficient". A norm that is not its gradients' (it misses or
// double-counts some) is never excused: its tensors keep their verdicts and the step's
// comparison says so. Private to core.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/manifest.h"

namespace ttrace {

// Fills result.clipping and re-judges the step tensors the factor explains. Call before
// assembleVerdicts.
void judgeClipCoefficient(DiffResult& result, const Manifest& reference, const Manifest& candidate);

} // namespace ttrace
