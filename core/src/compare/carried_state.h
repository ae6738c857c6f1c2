#pragma once
// Later steps judged without perturbed variants (docs/tolerance.md, "Later steps"): a tensor of
// step i > 0 is computed from parameters that carry the earlier steps' differences, which no
// analytic bound limits but this diff measures (every `parameter` of step i is compared).
// Private to core.
#include "ttrace/compare/diff_result.h"
#include "ttrace/compare/reduction_paths.h"

namespace ttrace {

// For every tensor whose bound is provisional for `Provisional::CarriedState`: its tolerance
// becomes its path's analytic bound plus the measured relative errors of the parameters of
// every leaf on its path at that step (the bound's own assumption: a layer passes a relative
// error on unamplified, and errors of different layers add). Over that, the tensor diverges
// with confidence (its state explains less than its error); within it, it stays provisional,
// since the parameters it rests on are themselves judged only provisionally. A tensor whose
// path holds a parameter this diff did not compare at that step keeps its provisional verdict.
void judgeCarriedState(DiffResult& result, const ReductionPaths& paths);

} // namespace ttrace
