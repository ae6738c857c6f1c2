#pragma once
// The optimizer-step conditioning of one tensor's tolerance (docs/tolerance.md, "Optimizer-step
// conditioning"): for a param_after_step or optimizer_state tensor, the reference gradient of
// the same parameter and step (main_grad, with its perturbed variants), the reference moments
// and the manifest's optimizer section give each ill-conditioned element a term; the element's
// tolerance is hypot(derived tolerance, term). Private to core.
#include "compare/tensor_comparison.h"
#include "ttrace/compare/diff_result.h"
#include "ttrace/merge/merge.h"

#include <vector>

namespace ttrace {

// Whether `id` is a training-state tensor whose comparison may carry conditioning terms and
// top elements: those are compared element-wise, never by the clean fast path.
bool hasOptimizerConditioning(const ComparisonContext& ctx, const TensorId& id);

// The terms of a reference state tensor (the step's own, combined with those the state carried
// from the previous step); reference only. Empty when the manifest has no optimizer section,
// the gradient was not captured, or the conditioning is switched off.
AdamTensorTerms stateConditioning(const ComparisonContext& ctx, const TensorId& id);

// Fills r.conditioning from the terms and the errors of `cand` against `ref`, and returns the
// error the verdict's ratio uses (r.metrics.relError where no element has a term).
double conditionedError(const ComparisonContext& ctx, const FullTensor& ref, const FullTensor& cand,
                        TensorResult& r);

// Records a state tensor's terms for the next step's state tensors to inherit.
void recordStateTerms(const TensorId& id, std::vector<ConditioningTerm> terms, StateTerms& out);

} // namespace ttrace
