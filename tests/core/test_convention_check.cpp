// A whole-run gradient factor named once (compare/convention_check.h), on synthetic results:
// excused only when every capture-side gradient carries the same factor and nothing after the
// reduction diverges; never when a main gradient diverges.
#include "compare/convention_check.h"
#include "ttrace/compare/verdict.h"

#include <QtTest>

using namespace ttrace;

namespace {

TensorResult gradient(TensorKind kind, double factor, std::string module = "layers.0") {
    TensorResult t;
    t.id.module = std::move(module);
    t.id.kind = kind;
    t.tolerance.value = 1e-6;
    t.metrics.refNorm = 1.0;
    t.metrics.relError = std::abs(factor - 1.0);
    t.ratio = toleranceRatio(t.metrics.relError, t.tolerance.value);
    t.status = verdictFor(t.ratio);
    if (t.status == Status::Divergent) {
        ShapeSignature s;
        s.kind = SignatureKind::ConstantFactor;
        s.factor = factor;
        s.residual = 1e-8;
        t.signatures.push_back(s);
        t.hint = {"dp-grad-sum-not-mean", "a hint a clean tensor must not keep"};
    }
    return t;
}

// A DP2 run whose capture took the convention wrongly: activation and parameter gradients
// x0.5, main gradients and the step agree.
DiffResult wronglyScaledRun() {
    DiffResult r;
    r.tensors = {gradient(TensorKind::OutputGrad, 0.5), gradient(TensorKind::InputGrad, 0.5),
                 gradient(TensorKind::ParamGrad, 0.5), gradient(TensorKind::MainGrad, 1.0),
                 gradient(TensorKind::ParamAfterStep, 1.0)};
    return r;
}

Manifest dp2() {
    Manifest m;
    m.parallel = {{"dp", 2}};
    m.gradientConvention = GradientConvention{"mean", 2.0, true, "declared: test", 1};
    return m;
}

} // namespace

class TestConventionCheck : public QObject {
    Q_OBJECT
private slots:
    void oneFactorEverywhereIsNamedOnceAndTheRunIsClean() {
        auto r = wronglyScaledRun();
        judgeConventionFactor(r, dp2());
        QVERIFY(r.convention);
        QCOMPARE(r.convention->factor, 0.5);
        QCOMPARE(r.convention->factorName, std::string("x0.5 (= 1/dp)"));
        QCOMPARE(r.convention->tensors, std::size_t{3});
        QVERIFY(r.convention->declared.find("declared: test") != std::string::npos);
        assembleVerdicts(r, {});
        QCOMPARE(exitCodeFor(r), 0);
        for (const auto& t : r.tensors) {
            QCOMPARE(t.status, Status::Clean);
            QVERIFY(t.hint.bugClass.empty());
        }
    }
    void aDivergentMainGradientIsNeverExcused() {
        auto r = wronglyScaledRun();
        r.tensors[3] = gradient(TensorKind::MainGrad, 0.5);
        judgeConventionFactor(r, dp2());
        QVERIFY(!r.convention);
        assembleVerdicts(r, {});
        QCOMPARE(exitCodeFor(r), 1);
    }
    void nothingAfterTheReductionComparedExcusesNothing() {
        auto r = wronglyScaledRun();
        r.tensors.resize(3);
        judgeConventionFactor(r, dp2());
        QVERIFY(!r.convention);
    }
    void twoFactorsOrAnUnscaledGradientAreNotAConvention() {
        auto r = wronglyScaledRun();
        r.tensors[2] = gradient(TensorKind::ParamGrad, 0.25);
        judgeConventionFactor(r, dp2());
        QVERIFY(!r.convention);
        auto unscaled = wronglyScaledRun();
        unscaled.tensors.push_back(gradient(TensorKind::InputGrad, 1.0, "layers.1"));
        judgeConventionFactor(unscaled, dp2());
        QVERIFY(!unscaled.convention);
    }
    void aForwardDivergenceIsNotAConvention() {
        auto r = wronglyScaledRun();
        r.tensors.push_back(gradient(TensorKind::ForwardOutput, 0.5, "layers.1"));
        r.tensors.back().shape = {4, 8};
        judgeConventionFactor(r, dp2());
        QVERIFY(!r.convention);
    }
};

QTEST_GUILESS_MAIN(TestConventionCheck)
#include "test_convention_check.moc"
