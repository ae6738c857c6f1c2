#pragma once
// The parameters after an Adam step whose clip coefficient differs from the reference's. Adam's
// update m_hat / (sqrt(v_hat) + eps) is scale-free where sqrt(v_hat) is far above eps, so a
// factor f on every gradient leaves most parameters where they were; where a gradient is tiny
// the update moves with f, by up to lr. A parameter whose own gradient agrees is judged against
// the reference's step re-evaluated element by element at f times its gradient
// (docs/tolerance.md, "Gradient clipping"). Private to core.
#include "compare/tensor_comparison.h"

#include <optional>

namespace ttrace {

// The error of `t`, a param_after_step of a clipped Adam/AdamW step, once the factor is taken
// out: the candidate less what `factor` times the gradient the reference's step used
// (`gradScale` times its captured main gradient) changes of the update, against the reference,
// as the comparison measures it (the step's conditioning terms included). Nothing when the step
// cannot be re-evaluated (no Adam step recorded, a tensor not captured, shapes that differ).
std::optional<double> paramErrorAfterClip(const ComparisonContext& context, const TensorResult& t,
                                          double factor, double gradScale);

} // namespace ttrace
