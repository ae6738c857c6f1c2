// Clipped steps read through the recorded clip coefficients (compare/clip_coefficient.h), on
// synthetic results: a coefficient moved by the norm's round-off moves the step's main
// gradients (and squared states by its square) and is excused; a norm that is not the
// gradients' excuses nothing.
#include "compare/clip_coefficient.h"
#include "ttrace/compare/verdict.h"

#include <QtTest>

#include <cmath>

using namespace ttrace;

namespace {

constexpr double kMaxNorm = 1.0;
constexpr double kTrueNorm = 10.0; // the reference's gradients before the clip

double coefficient(double norm) {
    return std::min(kMaxNorm / (norm + 1e-6), 1.0);
}

// A step tensor whose candidate is the reference's times `factor`.
TensorResult scaled(TensorKind kind, std::string index, double refNorm, double factor) {
    TensorResult t;
    t.id.module = "layers.0";
    t.id.kind = kind;
    t.id.index = std::move(index);
    t.tolerance.value = 1e-6;
    t.metrics.refNorm = refNorm;
    t.metrics.candNorm = refNorm * factor;
    t.metrics.relError = std::abs(factor - 1.0);
    t.metrics.elements = 500000;
    t.ratio = toleranceRatio(t.metrics.relError, t.tolerance.value);
    t.status = verdictFor(t.ratio);
    return t;
}

Manifest clipped(double norm) {
    Manifest m;
    m.clipSteps = {ClipStep{0, "nominal", norm, kMaxNorm, coefficient(norm), "test"}};
    return m;
}

// Main gradients captured after the clip (0.6 and 0.8 of the clipped norm) and one Adam
// second moment, for a candidate whose norm is `candidateNorm` while its gradients are the
// reference's.
DiffResult stepWithNorm(double candidateNorm) {
    const double f = coefficient(candidateNorm) / coefficient(kTrueNorm);
    const double c = coefficient(kTrueNorm);
    DiffResult r;
    r.tensors = {scaled(TensorKind::MainGrad, "weight", 0.6 * c * kTrueNorm, f),
                 scaled(TensorKind::MainGrad, "bias", 0.8 * c * kTrueNorm, f),
                 scaled(TensorKind::OptimizerState, "exp_avg_sq.weight", 1e-3, f * f)};
    return r;
}

} // namespace

class TestClipCoefficient : public QObject {
    Q_OBJECT
private slots:
    void aRoundOffCoefficientMovesTheStepAndIsExcused() {
        auto r = stepWithNorm(kTrueNorm * (1.0 + 2e-6));
        QCOMPARE(r.tensors[0].status, Status::Divergent); // 2e-6 over a 1e-6 tolerance
        judgeClipCoefficient(r, clipped(kTrueNorm), clipped(kTrueNorm * (1.0 + 2e-6)));
        QCOMPARE(r.clipping.size(), std::size_t{1});
        QVERIFY(r.clipping[0].consistent);
        QCOMPARE(r.clipping[0].moved, std::size_t{3});
        for (const auto& t : r.tensors) {
            QCOMPARE(t.status, Status::Clean);
            QCOMPARE(t.findings.back().code, std::string("clip-coefficient"));
        }
    }

    void aNormThatMissesPartOfTheGradientsExcusesNothing() {
        auto r = stepWithNorm(0.9 * kTrueNorm); // 10% of the squares not counted
        judgeClipCoefficient(r, clipped(kTrueNorm), clipped(0.9 * kTrueNorm));
        QCOMPARE(r.clipping.size(), std::size_t{1});
        QVERIFY(!r.clipping[0].consistent);
        QVERIFY(r.clipping[0].candidateNormError > 0.1);
        for (const auto& t : r.tensors) {
            QCOMPARE(t.status, Status::Divergent);
            // The factor alone explains it: the clipping's divergence, not its module's.
            QCOMPARE(t.findings.back().code, std::string("clip-coefficient"));
        }
        QCOMPARE(r.clipping[0].moved, std::size_t{3});
        QVERIFY(r.clipping[0].toString().find("wrong global norm") != std::string::npos);
        // Its gradients before the reduction agree: the module inherits the divergence from
        // the clipping, it does not introduce it.
        r.tensors.push_back(scaled(TensorKind::ParamGrad, "weight", 1.0, 1.0));
        assembleVerdicts(r, {{"layers.0", 0, 0, "Linear", {}}});
        QCOMPARE(r.module("layers.0")->origin, Origin::Inherited);
    }

    void withoutARecordedCoefficientNothingChanges() {
        auto r = stepWithNorm(kTrueNorm * (1.0 + 2e-6));
        judgeClipCoefficient(r, clipped(kTrueNorm), Manifest{});
        QVERIFY(r.clipping.empty());
        QCOMPARE(r.tensors[0].status, Status::Divergent);
    }
};

QTEST_GUILESS_MAIN(TestClipCoefficient)
#include "test_clip_coefficient.moc"
