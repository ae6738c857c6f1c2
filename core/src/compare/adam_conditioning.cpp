#include "ttrace/compare/adam_conditioning.h"

#include "ttrace/compare/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace ttrace {
namespace {

// The moments before the step, recovered from the ones after it: m = b1 m0 + (1 - b1) x and
// v = b2 v0 + (1 - b2) x^2. The first step starts from zero moments.
struct Moments {
    double m0 = 0.0;
    double v0 = 0.0;
};

double effectiveGradient(const AdamStep& s, const AdamElement& e) {
    const double g = s.maximize ? -e.grad : e.grad;
    return s.decoupled ? g : g + s.weightDecay * e.param;
}

Moments momentsBefore(const AdamStep& s, const AdamElement& e, double x) {
    if (s.step <= 1 || !e.hasState) {
        return {};
    }
    Moments m;
    m.m0 = (e.expAvg - (1.0 - s.beta1) * x) / s.beta1;
    // Round-off of the capture may leave a tiny negative; a second moment is never negative.
    m.v0 = std::max((e.expAvgSq - (1.0 - s.beta2) * x * x) / s.beta2, 0.0);
    return m;
}

// The quantity after one step from `prev` with effective gradient x (the parameter's update
// only: the decay term and the old value are the same at every x).
double stepValue(const AdamStep& s, AdamQuantity q, const Moments& prev, double x) {
    const double m = s.beta1 * prev.m0 + (1.0 - s.beta1) * x;
    const double v = s.beta2 * prev.v0 + (1.0 - s.beta2) * x * x;
    if (q == AdamQuantity::ExpAvg) {
        return m;
    }
    if (q == AdamQuantity::ExpAvgSq) {
        return v;
    }
    const auto t = static_cast<double>(std::max<std::int64_t>(s.step, 1));
    const double mHat = m / (1.0 - std::pow(s.beta1, t));
    const double vHat = v / (1.0 - std::pow(s.beta2, t));
    return -s.lr * mHat / (std::sqrt(vHat) + s.eps);
}

double rms(std::span<const double> values) {
    double sum = 0.0;
    for (const double v : values) {
        sum += v * v;
    }
    return values.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(values.size()));
}

} // namespace

std::optional<AdamStep> adamStepAt(OptimizerType type, const OptimizerGroup& group,
                                   std::int64_t iteration) {
    const auto* info = group.stepAt(iteration);
    if (!info || group.amsgrad || info->step < 1) {
        return std::nullopt;
    }
    AdamStep s;
    s.lr = info->lr;
    s.beta1 = group.beta1;
    s.beta2 = group.beta2;
    s.eps = group.eps;
    s.weightDecay = group.weightDecay;
    s.step = info->step;
    s.decoupled = type == OptimizerType::AdamW;
    s.maximize = group.maximize;
    return s;
}

bool adamIllConditioned(const AdamStep& s, const AdamElement& e) {
    if (e.delta <= 0.0) {
        return false;
    }
    const double x = effectiveGradient(s, e);
    if (std::abs(x) <= e.delta) {
        return true;
    }
    const double v = e.hasState ? e.expAvgSq : (1.0 - s.beta2) * x * x;
    const auto t = static_cast<double>(std::max<std::int64_t>(s.step, 1));
    const double vHat = v / (1.0 - std::pow(s.beta2, t));
    return std::sqrt(std::max(vHat, 0.0)) <= kNearEpsMultiple * s.eps;
}

double adamUpdateChange(const AdamStep& s, AdamQuantity q, const AdamElement& e) {
    if (e.delta <= 0.0) {
        return 0.0;
    }
    const double x = effectiveGradient(s, e);
    const Moments prev = momentsBefore(s, e, x);
    const double at = stepValue(s, q, prev, x);
    const double up = std::abs(stepValue(s, q, prev, x + e.delta) - at);
    const double down = std::abs(stepValue(s, q, prev, x - e.delta) - at);
    const double change = std::max(up, down);
    return std::isfinite(change) ? change : 0.0;
}

double adamScaledGradientChange(const AdamStep& s, AdamQuantity q, const AdamElement& e,
                                double factor) {
    const double x = effectiveGradient(s, e);
    AdamElement scaled = e;
    scaled.grad = e.grad * factor;
    const Moments prev = momentsBefore(s, e, x);
    const double change =
        stepValue(s, q, prev, effectiveGradient(s, scaled)) - stepValue(s, q, prev, x);
    return std::isfinite(change) ? change : 0.0;
}

std::vector<double> gradientRoundoff(std::span<const double> grad,
                                     const std::vector<std::span<const double>>& variants,
                                     double gradTolerance, double safety) {
    const double base = gradTolerance * rms(grad);
    std::vector<double> delta(grad.size(), 0.0);
    for (std::size_t i = 0; i < grad.size(); ++i) {
        double spread = 0.0;
        bool exactZero = grad[i] == 0.0;
        for (const auto& v : variants) {
            spread = std::max(spread, std::abs(v[i] - grad[i]));
            exactZero = exactZero && v[i] == 0.0;
        }
        delta[i] = exactZero ? 0.0 : std::max(base, safety * spread);
    }
    return delta;
}

AdamTensorTerms adamConditioning(const AdamTensorInput& in) {
    AdamTensorTerms out;
    const std::size_t n = in.grad.size();
    const bool hasState = in.expAvg.size() == n && in.expAvgSq.size() == n;
    const bool fits =
        in.param.size() == n && std::all_of(in.gradVariants.begin(), in.gradVariants.end(),
                                            [n](const auto& v) { return v.size() == n; });
    // Past the first step the moments before the step come from the captured state.
    if (!fits || (!hasState && in.step.step > 1)) {
        return out;
    }
    const auto delta = gradientRoundoff(in.grad, in.gradVariants, in.gradTolerance, in.safety);
    for (std::size_t i = 0; i < n; ++i) {
        AdamElement e;
        e.grad = in.grad[i];
        e.delta = delta[i];
        e.param = in.param[i];
        e.hasState = hasState;
        e.expAvg = hasState ? in.expAvg[i] : 0.0;
        e.expAvgSq = hasState ? in.expAvgSq[i] : 0.0;
        if (!adamIllConditioned(in.step, e)) {
            continue;
        }
        ++out.illConditioned;
        if (const double term = adamUpdateChange(in.step, in.quantity, e); term > 0.0) {
            out.terms.push_back({static_cast<std::int64_t>(i), term});
        }
    }
    return out;
}

bool optimizerConditioningEnabled(const ToleranceSettings& settings) {
    const char* off = std::getenv("TTRACE_NO_OPTIMIZER_CONDITIONING");
    return settings.optimizerConditioning && !(off && std::string_view(off) == "1");
}

} // namespace ttrace
