#include "compare/clip_adam_step.h"

#include "compare/optimizer_conditioning.h"
#include "ttrace/compare/metrics.h"
#include "ttrace/merge/merge.h"

#include <optional>

namespace ttrace {
namespace {

std::optional<FullTensor> merged(const Bundle& bundle, const TensorId& id) {
    if (!bundle.shards(id)) {
        return std::nullopt;
    }
    return std::move(mergeTensor(bundle, id).tensor);
}

// The reference's step of one parameter: the gradient it used and the moments after it.
struct StepTensors {
    std::optional<FullTensor> grad, expAvg, expAvgSq;
};

StepTensors referenceStep(const Bundle& reference, const TensorId& id) {
    StepTensors s;
    TensorId at = id;
    at.kind = TensorKind::MainGrad;
    s.grad = merged(reference, at);
    at.kind = TensorKind::OptimizerState;
    at.index = "exp_avg." + id.index;
    s.expAvg = merged(reference, at);
    at.index = "exp_avg_sq." + id.index;
    s.expAvgSq = merged(reference, at);
    return s;
}

// The candidate less the update's change at `factor`: what the reference would be had its
// step clipped like the candidate's. Empty when the inputs do not fit together.
std::optional<FullTensor> unclipped(const AdamStep& step, const StepTensors& s,
                                    const FullTensor& ref, const FullTensor& cand, double factor,
                                    double gradScale) {
    const std::size_t n = ref.values.size();
    const bool hasState =
        s.expAvg && s.expAvgSq && s.expAvg->values.size() == n && s.expAvgSq->values.size() == n;
    if (!s.grad || s.grad->values.size() != n || cand.values.size() != n ||
        (!hasState && step.step > 1)) {
        return std::nullopt;
    }
    FullTensor out;
    out.id = cand.id;
    out.dtype = cand.dtype;
    out.shape = cand.shape;
    out.values = cand.values;
    for (std::size_t i = 0; i < n; ++i) {
        AdamElement e;
        e.grad = s.grad->values[i] * gradScale;
        e.param = ref.values[i];
        e.hasState = hasState;
        e.expAvg = hasState ? s.expAvg->values[i] : 0.0;
        e.expAvgSq = hasState ? s.expAvgSq->values[i] : 0.0;
        out.values[i] -= adamScaledGradientChange(step, AdamQuantity::Param, e, factor);
    }
    return out;
}

} // namespace

std::optional<double> paramErrorAfterClip(const ComparisonContext& ctx, const TensorResult& t,
                                          double factor, double gradScale) {
    const auto& config = ctx.reference.manifest().optimizer;
    const auto* group = config ? config->groupFor(t.id.module, t.id.index) : nullptr;
    const auto step = group ? adamStepAt(config->type, *group, t.id.iteration) : std::nullopt;
    if (!step || t.id.kind != TensorKind::ParamAfterStep) {
        return std::nullopt;
    }
    const auto ref = merged(ctx.reference, t.id);
    const auto cand = merged(ctx.candidate, t.id);
    if (!ref || !cand) {
        return std::nullopt;
    }
    const auto moved =
        unclipped(*step, referenceStep(ctx.reference, t.id), *ref, *cand, factor, gradScale);
    if (!moved) {
        return std::nullopt;
    }
    TensorResult probe = t;
    probe.metrics = computeMetrics(*ref, *moved);
    return conditionedError(ctx, *ref, *moved, probe);
}

} // namespace ttrace
