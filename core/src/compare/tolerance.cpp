#include "ttrace/compare/tolerance.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ttrace {
namespace {

// The names of `provisional` in the diff JSON (docs/diff-json.md).
constexpr NameTable kProvisionalNames{Provisional::CarriedState,
                                      std::array<std::pair<Provisional, std::string_view>, 3>{{
                                          {Provisional::None, "none"},
                                          {Provisional::OptimizerStep, "optimizer_step"},
                                          {Provisional::CarriedState, "carried_state"},
                                      }}};

bool isForwardActivation(TensorKind kind) {
    return kind == TensorKind::ForwardInput || kind == TensorKind::ForwardOutput;
}

const ToleranceOverride* lastMatch(const ToleranceSettings& settings, const ToleranceInput& in) {
    const ToleranceOverride* found = nullptr;
    for (const auto& o : settings.overrides) {
        if ((!o.kind || *o.kind == in.kind) && globMatch(o.modulePattern, in.module)) {
            found = &o; // later entries win
        }
    }
    return found;
}

} // namespace

double accumulationEpsilon(std::string_view precision, DType storage) {
    if (precision == "fp32") {
        return machineEpsilon(DType::Float32);
    }
    if (precision == "bf16" || precision == "bf16-autocast" || precision == "fp8") {
        return machineEpsilon(DType::BFloat16);
    }
    if (precision == "fp16") {
        return machineEpsilon(DType::Float16);
    }
    return isFloating(storage) ? machineEpsilon(storage) : machineEpsilon(DType::Float32);
}

int roundoffDepth(TensorKind kind, int moduleDepth, int maxDepth) {
    if (isForwardActivation(kind)) {
        return std::max(moduleDepth, 0);
    }
    return std::max(maxDepth - moduleDepth + 1, 0);
}

double analyticTolerance(double k, double c, int depth, double eps) {
    return k * std::pow(c, depth) * eps;
}

std::string_view provisionalName(Provisional reason) {
    return kProvisionalNames.name(reason);
}

std::optional<Provisional> parseProvisional(std::string_view name) {
    return kProvisionalNames.parse(name);
}

double reductionRoundoff(DType storage) {
    return storage == DType::Float64 ? machineEpsilon(DType::Float64) / 2.0
                                     : machineEpsilon(DType::Float32) / 2.0;
}

double pathTolerance(double reductions, double roundings, double uAccumulate, double uStore) {
    const double variance =
        uAccumulate * uAccumulate * reductions + uStore * uStore * std::max(roundings, 1.0);
    return kAnalyticSigmas * std::sqrt(2.0 * variance);
}

double reductionOrderTolerance(double n, double partials, double uAccumulate, double uStore) {
    const double variance = uAccumulate * uAccumulate * n + uStore * uStore * partials;
    return kAnalyticSigmas * std::sqrt(2.0 * variance);
}

NoiseFloor noiseFloor(std::span<const double> errors) {
    NoiseFloor f;
    f.samples = static_cast<int>(errors.size());
    if (errors.empty()) {
        return f;
    }
    const auto n = static_cast<double>(errors.size());
    f.mean = std::accumulate(errors.begin(), errors.end(), 0.0) / n;
    if (errors.size() > 1) {
        double ss = 0.0;
        for (const double e : errors) {
            ss += (e - f.mean) * (e - f.mean);
        }
        f.spread = std::sqrt(ss / (n - 1.0)); // unbiased: K is tiny (2-4 variants)
    }
    const auto [lo, hi] = std::minmax_element(errors.begin(), errors.end());
    f.minSample = *lo;
    f.maxSample = *hi;
    return f;
}

double floorDisagreement(const NoiseFloor& floor, double eps) {
    if (floor.samples < 2 || !std::isfinite(floor.maxSample) || !(eps > 0.0)) {
        return 0.0;
    }
    return floor.maxSample / std::max(floor.minSample, eps);
}

bool unstableFloor(const Tolerance& tolerance) {
    return tolerance.source == ToleranceSource::Empirical &&
           tolerance.floorDisagreement > kUnstableFloorFactor;
}

NoiseFloor carryFloor(TensorKind kind, const NoiseFloor& own, const NoiseFloor& carried) {
    NoiseFloor f = own;
    f.samples = std::max(own.samples, carried.samples);
    if (kind == TensorKind::Parameter) {
        if (carried.mean + carried.spread > own.mean + own.spread) {
            f.mean = carried.mean;
            f.spread = carried.spread;
        }
    } else if (kind == TensorKind::ParamAfterStep || kind == TensorKind::OptimizerState) {
        f.mean = std::hypot(own.mean, carried.mean);
        f.spread = std::hypot(own.spread, carried.spread);
    }
    return f;
}

std::optional<TensorKind> carriedStateKind(TensorKind kind) {
    switch (kind) {
    case TensorKind::Parameter:
    case TensorKind::ParamAfterStep: return TensorKind::ParamAfterStep;
    case TensorKind::OptimizerState: return TensorKind::OptimizerState;
    default: return std::nullopt;
    }
}

double empiricalTolerance(double safetyFactor, const NoiseFloor& floor, double eps) {
    const double safety = safetyFactor > 0.0 ? safetyFactor : kDefaultSafetyFactor;
    return std::max(safety * (floor.mean + kSpreadSigmas * floor.spread), kMinEpsMultiple * eps);
}

Tolerance deriveTolerance(const ToleranceSettings& settings, const ToleranceInput& in) {
    Tolerance t;
    t.eps = accumulationEpsilon(in.precision, in.dtype);
    t.depth = roundoffDepth(in.kind, in.moduleDepth, in.maxDepth);
    t.analytic = analyticTolerance(settings.k, settings.c, t.depth, t.eps);
    if (in.pathReductions) {
        // The storage dtype rounds at eps / 2 (the recipe's eps); reductions at float32's.
        t.reductionLength = *in.pathReductions;
        t.storageRoundings = in.pathRoundings;
        t.analytic = std::max(pathTolerance(t.reductionLength, t.storageRoundings,
                                            reductionRoundoff(in.dtype), t.eps / 2.0),
                              kMinEpsMultiple * t.eps);
    }
    if (in.floor && in.floor->samples > 0) {
        const NoiseFloor f = in.carried ? carryFloor(in.kind, *in.floor, *in.carried) : *in.floor;
        t.floorMean = f.mean;
        t.floorSpread = f.spread;
        t.carriedMean = in.carried ? in.carried->mean : 0.0;
        t.perturbedSamples = f.samples;
        // The variants' own samples, not the carried part: their disagreement is what says
        // that this tensor's floor was drawn from too few of them.
        t.floorMin = in.floor->minSample;
        t.floorMax = in.floor->maxSample;
        t.floorDisagreement = floorDisagreement(*in.floor, t.eps);
        if (std::isfinite(f.mean) && std::isfinite(f.spread)) {
            t.empirical = empiricalTolerance(settings.safetyFactor, f, t.eps);
        }
        if (in.ownReductions > 0.0) {
            t.ownReductionLength = in.ownReductions;
            t.reductionOrder = reductionOrderTolerance(in.ownReductions, in.ownPartials,
                                                       reductionRoundoff(in.dtype), t.eps / 2.0);
        }
    }
    if (!isFloating(in.dtype)) {
        // Token ids, masks, counters: round-off cannot change an integer.
        t.value = 0.0;
        t.source = ToleranceSource::Exact;
        return t;
    }
    if (const auto* o = lastMatch(settings, in)) {
        t.value = o->value;
        t.source = ToleranceSource::Override;
        return t;
    }
    if (settings.global) {
        t.value = *settings.global;
        t.source = ToleranceSource::Override;
        return t;
    }
    if (t.empirical) {
        // The floor measures how input round-off is amplified up to this tensor; re-ordering
        // its own long reduction is a second, independent error: in quadrature.
        t.value = std::hypot(*t.empirical, t.reductionOrder);
        t.source = ToleranceSource::Empirical;
    } else {
        t.value = t.analytic;
        t.source = ToleranceSource::Analytic;
        t.provisional = in.provisional;
    }
    t.value = std::max(t.value, settings.floor);
    return t;
}

} // namespace ttrace
