#pragma once
// A whole-run gradient factor named once, not reported as hundreds of divergences: when every
// divergent tensor is a capture-side gradient (activation gradients, per-rank parameter
// gradients before the reduction, the per-rank loss), every one is the reference's times one
// common factor within its tolerance, no such gradient escapes the factor, and the main
// gradients were compared and agree, the capture took the job's gradient convention wrongly.
// Those gradients are judged after the factor. A divergence after the reduction (main
// gradients, the step, parameters) is never excused. Private to core.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/manifest.h"

namespace ttrace {

// Sets result.convention and re-judges the scaled gradients when the run fits; otherwise
// leaves the result as it is. Call before assembleVerdicts.
void judgeConventionFactor(DiffResult& result, const Manifest& candidate);

} // namespace ttrace
