#include "compare/clip_coefficient.h"

#include "compare/clip_adam_step.h"
#include "compare/signature_text.h"
#include "ttrace/compare/verdict.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

namespace ttrace {
namespace {

// The safety factor of the analytic bound (docs/tolerance.md): the candidate's norm may be off
// its gradients' by this many times the reference's own norm round-off.
constexpr double kSafety = 4.0;
constexpr double kFloat32UnitRoundoff = 0x1p-24;

// The step's one nominal clip record; none when the step clipped more than once (no single
// coefficient moves its tensors).
const ClipStep* clipStepOf(const Manifest& m, std::int64_t iteration) {
    const ClipStep* found = nullptr;
    for (const auto& s : m.clipSteps) {
        if (s.variant != "nominal" || s.iteration != iteration) {
            continue;
        }
        if (found) {
            return nullptr;
        }
        found = &s;
    }
    return found;
}

// The norms of both sides' main gradients of one step, over every logical tensor (double
// accumulation); incomplete when one of them could not be compared.
struct GradNorms {
    double reference = 0.0, candidate = 0.0;
    std::int64_t elements = 0;
    bool complete = false;
};

GradNorms mainGradNorms(const DiffResult& r, std::int64_t iteration) {
    GradNorms n;
    double ref2 = 0.0, cand2 = 0.0;
    for (const auto& t : r.tensors) {
        if (t.id.kind != TensorKind::MainGrad || t.id.iteration != iteration) {
            continue;
        }
        if (t.status != Status::Clean && t.status != Status::Divergent) {
            return {};
        }
        if (t.structure != StructuralChange::None) {
            return {};
        }
        ref2 += t.metrics.refNorm * t.metrics.refNorm;
        cand2 += t.metrics.candNorm * t.metrics.candNorm;
        n.elements += t.metrics.elements;
        n.complete = true;
    }
    n.reference = std::sqrt(ref2);
    n.candidate = std::sqrt(cand2);
    return n;
}

// Relative distance of the captured gradients' norm from the norm the framework clipped with:
// main gradients captured before the clip carry the norm itself, after it the norm times the
// coefficient.
double normError(double gradNorm, const ClipStep& s, bool afterClip) {
    const double expected = afterClip ? s.totalNorm * s.coefficient : s.totalNorm;
    return expected > 0.0 ? std::abs(gradNorm / expected - 1.0) : HUGE_VAL;
}

// How a tensor of the step scales with the coefficient: gradients and first moments by it,
// squared states (Adam's exp_avg_sq, RMSprop's square_avg) by its square; 0: not re-judged.
int clipPower(const TensorResult& t, bool afterClip) {
    if (t.id.kind == TensorKind::MainGrad) {
        return afterClip ? 1 : 0;
    }
    if (t.id.kind != TensorKind::OptimizerState) {
        return 0;
    }
    const auto& index = t.id.index;
    return index.find("_sq") != std::string::npos || index.find("square") != std::string::npos ? 2
                                                                                               : 1;
}

// The relative error of candidate / scale against the reference, from the tensor's norms and
// error alone (double): with a = ||c|| / ||r|| and e = ||c - r|| / ||r||, <c, r> / ||r||^2 is
// (a^2 + 1 - e^2) / 2, so ||c / scale - r||^2 / ||r||^2 = a^2 / scale^2 - 2 <c, r> / (scale
// ||r||^2) + 1. Negative values are rounding and read as 0.
double rescaledError(const TensorMetrics& m, double scale) {
    if (!(m.refNorm > 0.0) || !(scale > 0.0)) {
        return HUGE_VAL;
    }
    const double a = m.candNorm / m.refNorm;
    const double cr = (a * a + 1.0 - m.relError * m.relError) / 2.0;
    const double e2 = a * a / (scale * scale) - 2.0 * cr / scale + 1.0;
    return std::sqrt(std::max(e2, 0.0));
}

// The error of a step tensor once the factor is taken out, and what was taken out; nothing
// for a tensor the coefficient does not move (or that cannot be re-evaluated).
struct AfterFactor {
    double error = 0.0;
    std::string how;
};

std::optional<AfterFactor> afterFactor(const TensorResult& t, const ComparisonContext* ctx,
                                       const ClipComparison& c, bool afterClip, double gradScale) {
    if (t.id.kind == TensorKind::ParamAfterStep) {
        const auto error = ctx ? paramErrorAfterClip(*ctx, t, c.factor, gradScale) : std::nullopt;
        if (!error) {
            return std::nullopt;
        }
        return AfterFactor{*error, "Adam's step re-evaluated at x" + formatFactor(c.factor) +
                                       " its gradient (the candidate's coefficient over the "
                                       "reference's)"};
    }
    const int power = clipPower(t, afterClip);
    if (power == 0) {
        return std::nullopt;
    }
    const double expected = std::pow(c.factor, power);
    return AfterFactor{rescaledError(t.metrics, expected),
                       "x" + std::to_string(expected) +
                           " (the candidate's coefficient over the reference's" +
                           (power == 2 ? ", squared" : "") + ")"};
}

// The divergent tensors of the step that the factor explains: judged after it (clean) when the
// candidate's norm is its gradients', else left divergent and attributed to the clipping (a
// wrong global norm moved them, not their own module). Returns how many.
std::size_t judgeAfterFactor(DiffResult& r, const ComparisonContext* ctx, const ClipComparison& c,
                             bool afterClip, double gradScale) {
    std::size_t moved = 0;
    for (auto& t : r.tensors) {
        if (t.id.iteration != c.iteration || t.status != Status::Divergent ||
            t.structure != StructuralChange::None) {
            continue;
        }
        const auto after = afterFactor(t, ctx, c, afterClip, gradScale);
        const double ratio = after ? toleranceRatio(after->error, t.tolerance.value) : HUGE_VAL;
        if (!after || tensorVerdict(ratio, t.tolerance) != Status::Clean) {
            continue;
        }
        const std::string error = ": relative error " + formatFactor(after->error);
        if (c.consistent) {
            t.ratio = ratio;
            t.status = Status::Clean;
            t.hint = {};
            t.findings.push_back(
                makeWarning(DiagnosticCode::ClipCoefficient, "tensor " + t.id.path(),
                            "moved by the clip coefficient: judged after " + after->how + error));
        } else {
            // A class the signature named for the clipping itself stays.
            if (t.hint.bugClass != "grad-clip-no-mp-reduce") {
                t.hint = {"", "moved by the clip coefficient only: gradient clipping used a "
                              "wrong global norm"};
            }
            t.findings.push_back(makeWarning(
                DiagnosticCode::ClipCoefficient, "tensor " + t.id.path(),
                "moved by the clip coefficient, from a wrong global norm: within its tolerance "
                "after " +
                    after->how + error));
        }
        ++moved;
    }
    return moved;
}

} // namespace

std::string ClipComparison::toString() const {
    std::ostringstream out;
    // A round-off factor (1 - 2.5e-06) would read "x1" at formatFactor's precision.
    std::ostringstream f;
    f.precision(std::abs(factor - 1.0) < 1e-3 ? 9 : 4);
    f << factor;
    out << "iteration " << iteration << ": the candidate's clip coefficient is x" << f.str()
        << " the reference's (global gradient norm " << formatFactor(candidateNorm) << " vs "
        << formatFactor(referenceNorm) << "); ";
    if (consistent) {
        out << "its norm is its own gradients' within round-off ("
            << formatFactor(candidateNormError) << ", the reference's own "
            << formatFactor(referenceNormError) << "), so " << moved
            << " tensors of the step are judged after that factor (moved by the clip coefficient)";
    } else {
        out << "its norm is not the norm of its own gradients (off by "
            << formatFactor(candidateNormError) << ", the reference's own round-off "
            << formatFactor(referenceNormError)
            << "): gradient clipping used a wrong global norm (a part missing or counted twice, "
               "e.g. a model-parallel reduction of the norm), which moves every gradient and "
               "optimizer state of the step";
        if (moved > 0) {
            out << " (" << moved
                << " divergent tensors of the step are that factor alone: the clipping's, not "
                   "their modules')";
        }
    }
    return out.str();
}

void judgeClipCoefficient(DiffResult& r, const Manifest& reference, const Manifest& candidate,
                          const ComparisonContext* context) {
    std::vector<std::int64_t> iterations;
    for (const auto& s : candidate.clipSteps) {
        iterations.push_back(s.iteration);
    }
    std::sort(iterations.begin(), iterations.end());
    iterations.erase(std::unique(iterations.begin(), iterations.end()), iterations.end());
    for (const auto iteration : iterations) {
        const auto* ref = clipStepOf(reference, iteration);
        const auto* cand = clipStepOf(candidate, iteration);
        const auto norms = mainGradNorms(r, iteration);
        if (!ref || !cand || !norms.complete || !(ref->coefficient > 0.0) ||
            cand->coefficient == ref->coefficient) {
            continue;
        }
        // Where the capture took the main gradients: the reference's own norm tells.
        const bool afterClip =
            normError(norms.reference, *ref, true) < normError(norms.reference, *ref, false);
        ClipComparison c;
        c.iteration = iteration;
        c.referenceNorm = ref->totalNorm;
        c.candidateNorm = cand->totalNorm;
        c.factor = cand->coefficient / ref->coefficient;
        c.referenceNormError = normError(norms.reference, *ref, afterClip);
        c.candidateNormError = normError(norms.candidate, *cand, afterClip);
        // At least the round-off a float32 sum of this many squares can show.
        const double floor =
            kFloat32UnitRoundoff *
            std::log2(static_cast<double>(std::max<std::int64_t>(norms.elements, 2)));
        c.consistent = c.candidateNormError <= kSafety * std::max(c.referenceNormError, floor);
        c.moved = judgeAfterFactor(r, context, c, afterClip, afterClip ? 1.0 : ref->coefficient);
        r.clipping.push_back(c);
    }
}

} // namespace ttrace
