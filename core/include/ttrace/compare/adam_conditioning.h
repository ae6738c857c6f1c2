#pragma once
// How ill-conditioned one Adam/AdamW step is at each element (docs/tolerance.md,
// "Optimizer-step conditioning"). The update m_hat / (sqrt(v_hat) + eps) is a smooth function
// of the gradient almost everywhere, but where sqrt(v_hat) is near eps, or the gradient is
// within round-off of zero, a round-off change of the gradient moves the updated value by up to
// lr, far more than the perturbed reference variants happen to show. The term re-evaluates the
// step at the gradient plus and minus its round-off and takes the larger change.
#include "ttrace/compare/element_conditioning.h"
#include "ttrace/io/optimizer_config.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ttrace {

struct ToleranceSettings;

// sqrt(v_hat) at or below this many eps counts as "near eps".
inline constexpr double kNearEpsMultiple = 100.0;

// The hyper-parameters of one step of one parameter group.
struct AdamStep {
    double lr = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weightDecay = 0.0;
    std::int64_t step = 1; // the step count after this step (1 for the first)
    bool decoupled = true; // AdamW; false: Adam's L2 decay added to the gradient
    bool maximize = false;
};
// The step `group` took at `iteration`, or nothing when it was not recorded or when the group
// uses a variant whose update is not re-evaluated here (amsgrad).
std::optional<AdamStep> adamStepAt(OptimizerType type, const OptimizerGroup& group,
                                   std::int64_t iteration);

// Which value of the step an element's tolerance is for.
enum class AdamQuantity { Param, ExpAvg, ExpAvgSq };

// One element of the reference, all values after the step, as captured.
struct AdamElement {
    double grad = 0.0;     // the (main) gradient the step used
    double delta = 0.0;    // its round-off (0: exact)
    double param = 0.0;    // the parameter (used by Adam's L2 decay only)
    double expAvg = 0.0;   // m after the step
    double expAvgSq = 0.0; // v after the step
    bool hasState = false; // m and v captured; else only a first step can be re-evaluated
};

// Whether the element's update is ill-conditioned: |g| <= delta or sqrt(v_hat) <= 100 eps.
bool adamIllConditioned(const AdamStep& step, const AdamElement& e);
// max over +-delta of |quantity(g +- delta) - quantity(g)|, the other inputs held.
double adamUpdateChange(const AdamStep& step, AdamQuantity quantity, const AdamElement& e);

// How far the quantity moves when the step's gradient is scaled by `factor` (another clip
// coefficient), the moments before the step held: q(factor * g) - q(g). Adam's update is
// scale-free where sqrt(v_hat) is far above eps and moves by up to lr where it is not.
double adamScaledGradientChange(const AdamStep& step, AdamQuantity quantity, const AdamElement& e,
                                double factor);

// Per-element round-off of the gradient: max(tol_g * rms(g), safety * max_k |g_k - g|) over the
// perturbed variants g_k; 0 where g and every g_k are exactly zero (a gradient that is exactly
// zero everywhere, e.g. an unused embedding row, carries no round-off).
std::vector<double> gradientRoundoff(std::span<const double> grad,
                                     const std::vector<std::span<const double>>& variants,
                                     double gradTolerance, double safety);

struct AdamTensorInput {
    AdamStep step;
    AdamQuantity quantity = AdamQuantity::Param;
    std::span<const double> grad;
    std::vector<std::span<const double>> gradVariants;
    double gradTolerance = 0.0; // the gradient's derived relative tolerance
    double safety = 0.0;        // the empirical safety factor
    std::span<const double> param;
    std::span<const double> expAvg;   // empty when not captured
    std::span<const double> expAvgSq; // empty when not captured
};
struct AdamTensorTerms {
    std::vector<ConditioningTerm> terms; // the ill-conditioned elements with a non-zero term
    std::int64_t illConditioned = 0;
};
// The terms of every ill-conditioned element; empty when the inputs do not fit together.
AdamTensorTerms adamConditioning(const AdamTensorInput& in);

// Whether the diff applies the term: the setting, unless TTRACE_NO_OPTIMIZER_CONDITIONING=1
// (a switch for measuring what the term changes).
bool optimizerConditioningEnabled(const ToleranceSettings& settings);

} // namespace ttrace
