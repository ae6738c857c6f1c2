#include "compare/optimizer_conditioning.h"

#include <algorithm>
#include <cmath>

namespace ttrace {
namespace {

bool isStateKind(TensorKind kind) {
    return kind == TensorKind::Parameter || kind == TensorKind::ParamAfterStep ||
           kind == TensorKind::OptimizerState;
}

// What a state tensor holds and of which parameter: param_after_step/<param>,
// optimizer_state/<state>.<param> (exp_avg and exp_avg_sq are re-evaluated).
std::optional<AdamQuantity> quantityOf(const TensorId& id, std::string& param) {
    if (id.kind == TensorKind::ParamAfterStep) {
        param = id.index;
        return AdamQuantity::Param;
    }
    const auto dot = id.index.find('.');
    if (id.kind != TensorKind::OptimizerState || dot == std::string::npos) {
        return std::nullopt;
    }
    param = id.index.substr(dot + 1);
    const auto state = id.index.substr(0, dot);
    if (state == "exp_avg") {
        return AdamQuantity::ExpAvg;
    }
    if (state == "exp_avg_sq") {
        return AdamQuantity::ExpAvgSq;
    }
    return std::nullopt;
}

std::optional<FullTensor> referenceTensor(const Bundle& reference, const TensorId& id) {
    if (!reference.shards(id)) {
        return std::nullopt;
    }
    return std::move(mergeTensor(reference, id).tensor);
}

// The reference gradient of a step, its perturbed variants, and its derived tolerance.
struct GradientSample {
    FullTensor nominal;
    std::vector<FullTensor> variants;
    double tolerance = 0.0;
};

std::optional<GradientSample> referenceGradient(const ComparisonContext& ctx, const TensorId& id) {
    auto nominal = referenceTensor(ctx.reference, id);
    if (!nominal) {
        return std::nullopt;
    }
    GradientSample g{std::move(*nominal), {}, 0.0};
    std::vector<double> errors;
    for (const auto& variant : ctx.perturbedVariants) {
        auto v = referenceTensor(ctx.reference, id.withVariant(variant));
        if (v && v->values.size() == g.nominal.values.size()) {
            errors.push_back(relativeError(v->values, g.nominal.values));
            g.variants.push_back(std::move(*v));
        }
    }
    ToleranceInput in;
    in.module = id.module;
    in.kind = id.kind;
    in.dtype = g.nominal.dtype;
    const auto* info = ctx.reference.manifest().findModule(id.module);
    in.moduleDepth = info ? info->depth : 0;
    in.maxDepth = ctx.maxDepth;
    in.precision = ctx.reference.manifest().precision;
    if (!errors.empty()) {
        in.floor = noiseFloor(errors);
    }
    g.tolerance = deriveTolerance(ctx.tolerance, in).value;
    return g;
}

// The step's own terms of one state tensor.
AdamTensorTerms ownTerms(const ComparisonContext& ctx, const TensorId& id) {
    std::string param;
    const auto quantity = quantityOf(id, param);
    const auto& config = ctx.reference.manifest().optimizer;
    const auto* group = quantity && config ? config->groupFor(id.module, param) : nullptr;
    const auto step = group ? adamStepAt(config->type, *group, id.iteration) : std::nullopt;
    if (!step) {
        return {};
    }
    TensorId at = id;
    at.kind = TensorKind::MainGrad;
    at.index = param;
    const auto grad = referenceGradient(ctx, at);
    at.kind = TensorKind::ParamAfterStep;
    const auto after = referenceTensor(ctx.reference, at);
    at.kind = TensorKind::OptimizerState;
    at.index = "exp_avg." + param;
    const auto expAvg = referenceTensor(ctx.reference, at);
    at.index = "exp_avg_sq." + param;
    const auto expAvgSq = referenceTensor(ctx.reference, at);
    if (!grad || !after) {
        return {};
    }
    AdamTensorInput in;
    in.step = *step;
    in.quantity = *quantity;
    in.grad = grad->nominal.values;
    for (const auto& v : grad->variants) {
        in.gradVariants.emplace_back(v.values);
    }
    in.gradTolerance = grad->tolerance;
    in.safety =
        ctx.tolerance.safetyFactor > 0.0 ? ctx.tolerance.safetyFactor : kDefaultSafetyFactor;
    in.param = after->values;
    if (expAvg && expAvgSq) {
        in.expAvg = expAvg->values;
        in.expAvgSq = expAvgSq->values;
    }
    return adamConditioning(in);
}

// Own and carried terms of the same elements add in quadrature (independent round-off).
std::vector<ConditioningTerm> combine(const std::vector<ConditioningTerm>& a,
                                      const std::vector<ConditioningTerm>& b) {
    std::vector<ConditioningTerm> out;
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
        if (j == b.size() || (i < a.size() && a[i].index < b[j].index)) {
            out.push_back(a[i++]);
        } else if (i == a.size() || b[j].index < a[i].index) {
            out.push_back(b[j++]);
        } else {
            out.push_back({a[i].index, std::hypot(a[i].term, b[j].term)});
            ++i;
            ++j;
        }
    }
    return out;
}

// The up-to-3 elements with the largest part of the ratio, each error weighted by
// base / hypot(base, term).
std::vector<ElementDetail> topElements(const FullTensor& ref, const FullTensor& cand, double base,
                                       const std::vector<ConditioningTerm>& terms) {
    std::vector<std::pair<double, ElementDetail>> top;
    auto t = terms.begin();
    for (std::size_t i = 0; i < ref.values.size(); ++i) {
        const auto index = static_cast<std::int64_t>(i);
        double term = 0.0;
        if (t != terms.end() && t->index == index) {
            term = (t++)->term;
        }
        const double error = std::abs(cand.values[i] - ref.values[i]);
        const double tolerance = std::hypot(base, term);
        const double part = tolerance > 0.0 ? error / tolerance : error;
        if (top.size() < 3 || part > top.back().first) {
            if (top.size() == 3) {
                top.pop_back();
            }
            top.push_back({part, {index, error, tolerance, term}});
            std::sort(top.begin(), top.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
        }
    }
    std::vector<ElementDetail> out;
    for (const auto& [part, detail] : top) {
        if (detail.error > 0.0) {
            out.push_back(detail);
        }
    }
    return out;
}

} // namespace

bool hasOptimizerConditioning(const ComparisonContext& ctx, const TensorId& id) {
    return isStateKind(id.kind) && optimizerConditioningEnabled(ctx.tolerance) &&
           ctx.reference.manifest().optimizer.has_value();
}

AdamTensorTerms stateConditioning(const ComparisonContext& ctx, const TensorId& id) {
    if (!isStateKind(id.kind) || !optimizerConditioningEnabled(ctx.tolerance) ||
        !ctx.reference.manifest().optimizer) {
        return {};
    }
    auto own = ownTerms(ctx, id);
    if (const auto state = carriedStateKind(id.kind)) {
        const auto it = ctx.carriedTerms.find({id.module, *state, id.index});
        if (it != ctx.carriedTerms.end()) {
            own.terms = combine(own.terms, it->second);
        }
    }
    return own;
}

double conditionedError(const ComparisonContext& ctx, const FullTensor& ref, const FullTensor& cand,
                        TensorResult& r) {
    auto& c = r.conditioning;
    const double plain = r.metrics.relError;
    const double refNorm = r.metrics.refNorm;
    c.conditionedError = plain;
    const bool derived = r.tolerance.source == ToleranceSource::Empirical ||
                         r.tolerance.source == ToleranceSource::Analytic;
    if (!isStateKind(r.id.kind) || !derived || !std::isfinite(plain) || refNorm <= 0.0 ||
        ref.values.empty() || ref.values.size() != cand.values.size()) {
        return plain;
    }
    auto terms = stateConditioning(ctx, r.id);
    const double base =
        r.tolerance.value * refNorm / std::sqrt(static_cast<double>(ref.values.size()));
    if (r.id.kind != TensorKind::Parameter || !terms.terms.empty()) {
        c.topElements = topElements(ref, cand, base, terms.terms);
    }
    c.illConditioned = terms.illConditioned;
    if (terms.terms.empty()) {
        return plain; // exactly the plain ratio where no element has a term
    }
    double sumSq = (plain * refNorm) * (plain * refNorm);
    double termSq = 0.0;
    for (const auto& t : terms.terms) {
        const auto i = static_cast<std::size_t>(t.index);
        const double e = cand.values[i] - ref.values[i];
        const double weighted = e * base / std::hypot(base, t.term);
        sumSq += weighted * weighted - e * e;
        termSq += t.term * t.term;
    }
    c.relative = std::sqrt(termSq) / refNorm;
    c.conditionedError = std::sqrt(std::max(sumSq, 0.0)) / refNorm;
    c.terms = std::move(terms.terms);
    return c.conditionedError;
}

void recordStateTerms(const TensorId& id, std::vector<ConditioningTerm> terms, StateTerms& out) {
    if (id.kind == TensorKind::ParamAfterStep || id.kind == TensorKind::OptimizerState) {
        out[{id.module, id.kind, id.index}] = std::move(terms);
    }
}

} // namespace ttrace
