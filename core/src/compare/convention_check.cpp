#include "compare/convention_check.h"

#include "compare/signature_text.h"
#include "ttrace/compare/verdict.h"

#include <algorithm>
#include <cmath>

namespace ttrace {
namespace {

// What the capture scales by the job's convention before storing it.
bool captureSide(const TensorResult& t) {
    switch (t.id.kind) {
    case TensorKind::OutputGrad:
    case TensorKind::InputGrad:
    case TensorKind::ParamGrad: return true;
    case TensorKind::ForwardOutput: return t.shape.empty() && t.placement.starts_with("sum");
    default: return false;
    }
}

const ShapeSignature* factorOf(const TensorResult& t) {
    for (const auto& s : t.signatures) {
        if (s.kind == SignatureKind::ConstantFactor) {
            return &s;
        }
    }
    return nullptr;
}

// The relative error of candidate / common against the reference, from the fitted factor and
// the residual around it.
double rescaledError(const ShapeSignature& s, double common) {
    return std::hypot(s.residual, (s.factor - common) / common);
}

// The divergent capture-side gradients when they are the only divergences, no gradient with
// a nonzero reference escapes the factor, and some main gradient agrees; else nothing.
std::vector<std::size_t> scaledGradients(const DiffResult& r) {
    std::vector<std::size_t> scaled;
    bool mainGradAgrees = false;
    for (std::size_t i = 0; i < r.tensors.size(); ++i) {
        const auto& t = r.tensors[i];
        mainGradAgrees =
            mainGradAgrees || (t.id.kind == TensorKind::MainGrad && t.status == Status::Clean);
        if (t.status == Status::Divergent && captureSide(t) &&
            t.structure == StructuralChange::None) {
            scaled.push_back(i);
        } else if (t.status == Status::Divergent ||
                   (t.status == Status::Clean && captureSide(t) && t.metrics.refNorm > 0.0)) {
            return {};
        }
    }
    return mainGradAgrees ? scaled : std::vector<std::size_t>{};
}

ParallelSizes parallelSizes(const Manifest& candidate) {
    ParallelSizes sizes = candidate.parallel;
    sizes["micro_batches"] = candidate.microBatches;
    return sizes;
}

} // namespace

void judgeConventionFactor(DiffResult& r, const Manifest& candidate) {
    const auto scaled = scaledGradients(r);
    std::vector<double> factors;
    for (const auto i : scaled) {
        const auto* f = factorOf(r.tensors[i]);
        if (!f || !(f->factor > 0.0)) {
            return;
        }
        factors.push_back(f->factor);
    }
    if (factors.empty()) {
        return;
    }
    std::nth_element(factors.begin(), factors.begin() + factors.size() / 2, factors.end());
    const double common = factors[factors.size() / 2];
    for (const auto i : scaled) {
        const auto& t = r.tensors[i];
        if (toleranceRatio(rescaledError(*factorOf(t), common), t.tolerance.value) > 1.0) {
            return; // not one factor everywhere: each keeps its own verdict
        }
    }
    ConventionMismatch m;
    m.factor = common;
    m.factorName = "x" + formatFactor(common) + nameFactor(common, parallelSizes(candidate));
    m.tensors = scaled.size();
    m.declared = candidate.gradientConvention ? candidate.gradientConvention->toString()
                                              : std::string("not recorded");
    for (const auto i : scaled) {
        auto& t = r.tensors[i];
        const double error = rescaledError(*factorOf(t), common);
        t.ratio = toleranceRatio(error, t.tolerance.value);
        t.status = tensorVerdict(t.ratio, t.tolerance);
        t.hint = {};
        t.findings.push_back(makeWarning(DiagnosticCode::ConventionFactor, "tensor " + t.id.path(),
                                         "judged after the run's gradient convention factor " +
                                             m.factorName + ": relative error " +
                                             formatFactor(error) + " after it"));
    }
    r.convention = std::move(m);
}

} // namespace ttrace
