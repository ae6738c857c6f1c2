#include "compare/clip_coefficient.h"

#include "compare/signature_text.h"
#include "ttrace/compare/verdict.h"

#include <algorithm>
#include <cmath>
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

// Re-judges the step's divergent tensors after the factor; returns how many it cleared.
std::size_t judgeAfterFactor(DiffResult& r, const ClipComparison& c, bool afterClip) {
    std::size_t moved = 0;
    for (auto& t : r.tensors) {
        const int power = clipPower(t, afterClip);
        if (t.id.iteration != c.iteration || t.status != Status::Divergent || power == 0 ||
            t.structure != StructuralChange::None) {
            continue;
        }
        const double expected = std::pow(c.factor, power);
        const double error = rescaledError(t.metrics, expected);
        const double ratio = toleranceRatio(error, t.tolerance.value);
        if (tensorVerdict(ratio, t.tolerance) != Status::Clean) {
            continue;
        }
        t.ratio = ratio;
        t.status = Status::Clean;
        t.hint = {};
        t.findings.push_back(makeWarning(
            DiagnosticCode::ClipCoefficient, "tensor " + t.id.path(),
            "moved by the clip coefficient: judged after x" + std::to_string(expected) +
                " (the candidate's coefficient over the reference's" +
                (power == 2 ? ", squared" : "") + "): relative error " + formatFactor(error)));
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
    }
    return out.str();
}

void judgeClipCoefficient(DiffResult& r, const Manifest& reference, const Manifest& candidate) {
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
        if (c.consistent) {
            c.moved = judgeAfterFactor(r, c, afterClip);
        }
        r.clipping.push_back(c);
    }
}

} // namespace ttrace
