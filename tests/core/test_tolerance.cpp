// Every tolerance formula of docs/tolerance.md against hand-computed values.
#include "ttrace/compare/tolerance.h"

#include <QtTest>

#include <cmath>

using namespace ttrace;

namespace {

bool near(double a, double b) {
    return std::abs(a - b) <= 1e-12 * std::abs(b);
}

ToleranceInput input(TensorKind kind = TensorKind::ForwardOutput, DType dtype = DType::Float32) {
    ToleranceInput in;
    in.module = "layers.1.mlp.fc2";
    in.kind = kind;
    in.dtype = dtype;
    in.moduleDepth = 1;
    in.maxDepth = 3;
    in.precision = "fp32";
    return in;
}

} // namespace

class TestTolerance : public QObject {
    Q_OBJECT
private slots:
    void accumulationEpsilonFollowsTheRecipe() {
        QCOMPARE(accumulationEpsilon("fp32", DType::BFloat16), 0x1p-23);
        QCOMPARE(accumulationEpsilon("bf16", DType::Float32), 0x1p-7);
        QCOMPARE(accumulationEpsilon("bf16-autocast", DType::Float32), 0x1p-7);
        QCOMPARE(accumulationEpsilon("fp16", DType::Float32), 0x1p-10);
        QCOMPARE(accumulationEpsilon("fp8", DType::Float8E4M3), 0x1p-7); // BF16, as the paper
        QCOMPARE(accumulationEpsilon("", DType::Float16), 0x1p-10);      // unknown: storage
        QCOMPARE(accumulationEpsilon("", DType::Int64), 0x1p-23);
    }
    void depthCountsFromInputForwardAndFromLossBackward() {
        QCOMPARE(roundoffDepth(TensorKind::ForwardOutput, 2, 5), 2);
        QCOMPARE(roundoffDepth(TensorKind::ForwardInput, 0, 5), 0);
        QCOMPARE(roundoffDepth(TensorKind::InputGrad, 2, 5), 4); // 5 - 2 + 1
        QCOMPARE(roundoffDepth(TensorKind::MainGrad, 5, 5), 1);
        QCOMPARE(roundoffDepth(TensorKind::ParamAfterStep, 0, 5), 6);
    }
    void analyticIsKTimesCToTheDTimesEps() {
        // 4 * 1.03^3 * 2^-23 = 4 * 1.092727 * 1.1920929e-7
        QVERIFY(near(analyticTolerance(4.0, 1.03, 3, 0x1p-23), 4.0 * 1.092727 * 0x1p-23));
        QCOMPARE(analyticTolerance(4.0, 1.03, 0, 0x1p-7), 4.0 * 0x1p-7);
    }
    void pathBoundIsFourSigmasOfTwoRunsRoundOff() {
        // fp32: u = 2^-24 for storage and accumulation. 100 reduced terms and 4 roundings:
        // 4 * sqrt(2 * (u^2 * 100 + u^2 * 4)) = 4 * u * sqrt(208).
        const double u = 0x1p-24;
        QVERIFY(near(pathTolerance(100.0, 4.0, u, u), 4.0 * u * std::sqrt(208.0)));
        // At least one rounding: an exact path (a seeded parameter) keeps one storage ulp.
        QVERIFY(near(pathTolerance(0.0, 0.0, u, u), 4.0 * u * std::sqrt(2.0)));
        QCOMPARE(reductionRoundoff(DType::BFloat16), 0x1p-24); // 16-bit GEMMs accumulate in fp32
        QCOMPARE(reductionRoundoff(DType::Float64), 0x1p-53);
    }
    void analyticFromAPathAndProvisionalWithoutVariants() {
        auto in = input(TensorKind::InputGrad, DType::BFloat16);
        in.precision = "bf16";
        in.pathReductions = 400.0;
        in.pathRoundings = 12.0;
        in.provisional = Provisional::CarriedState;
        const auto t = deriveTolerance({}, in);
        QCOMPARE(t.source, std::string("analytic"));
        QCOMPARE(t.reductionLength, 400.0);
        QCOMPARE(t.storageRoundings, 12.0);
        QVERIFY(near(t.value, pathTolerance(400.0, 12.0, 0x1p-24, 0x1p-8)));
        QCOMPARE(t.provisional, Provisional::CarriedState);
        // With a measured floor the empirical bound decides and nothing is provisional.
        in.floor = NoiseFloor{1e-3, 1e-4, 2};
        const auto e = deriveTolerance({}, in);
        QCOMPARE(e.source, std::string("empirical"));
        QCOMPARE(e.provisional, Provisional::None);
        // Without a path the one-layer form stands (replays).
        auto plain = input();
        QVERIFY(near(deriveTolerance({}, plain).value, analyticTolerance(4.0, 1.03, 1, 0x1p-23)));
    }
    void noiseFloorIsMeanAndSampleStd() {
        const std::vector<double> errors{1e-7, 3e-7};
        const auto f = noiseFloor(errors);
        QCOMPARE(f.samples, 2);
        QVERIFY(near(f.mean, 2e-7));
        QVERIFY(near(f.spread, std::sqrt(2.0) * 1e-7)); // sqrt(((1e-7)^2 + (1e-7)^2) / 1)
        const std::vector<double> one{5e-7};
        QCOMPARE(noiseFloor(one).spread, 0.0);
        QCOMPARE(noiseFloor({}).samples, 0);
    }
    void empiricalIsSafetyTimesMeanPlusTwoSigmaClampedAtTwoEps() {
        const NoiseFloor f{2e-7, std::sqrt(2.0) * 1e-7, 2};
        // 4 * (2e-7 + 2 * 1.41421356e-7) = 1.93137085e-6
        QVERIFY(
            near(empiricalTolerance(0.0, f, 0x1p-23), 4.0 * (2e-7 + 2.0 * std::sqrt(2.0) * 1e-7)));
        QVERIFY(
            near(empiricalTolerance(2.0, f, 0x1p-23), 2.0 * (2e-7 + 2.0 * std::sqrt(2.0) * 1e-7)));
        // A perturbation that changed nothing (e.g. a parameter before the first step).
        QCOMPARE(empiricalTolerance(0.0, NoiseFloor{0.0, 0.0, 2}, 0x1p-23), 2.0 * 0x1p-23);
    }
    void stateFloorsCarryAcrossSteps() {
        const NoiseFloor own{3e-7, 4e-8, 2};
        const NoiseFloor carried{4e-7, 3e-8, 2};
        // parameter at step i is param_after_step of step i-1: the larger floor.
        auto f = carryFloor(TensorKind::Parameter, NoiseFloor{0.0, 0.0, 2}, carried);
        QCOMPARE(f.mean, 4e-7);
        QCOMPARE(f.spread, 3e-8);
        QCOMPARE(carryFloor(TensorKind::Parameter, own, NoiseFloor{1e-7, 0.0, 2}).mean, 3e-7);
        // param_after_step / optimizer_state: own and carried in quadrature, 3-4-5.
        f = carryFloor(TensorKind::ParamAfterStep, own, carried);
        QVERIFY(near(f.mean, 5e-7));
        QVERIFY(near(f.spread, 5e-8));
        QVERIFY(near(carryFloor(TensorKind::OptimizerState, own, carried).mean, 5e-7));
        // Activations and gradients do not carry state.
        QCOMPARE(carryFloor(TensorKind::ForwardOutput, own, carried).mean, 3e-7);
        QCOMPARE(*carriedStateKind(TensorKind::Parameter), TensorKind::ParamAfterStep);
        QCOMPARE(*carriedStateKind(TensorKind::OptimizerState), TensorKind::OptimizerState);
        QVERIFY(!carriedStateKind(TensorKind::MainGrad));
        // deriveTolerance applies it and reports the carried part.
        auto in = input(TensorKind::ParamAfterStep);
        in.floor = own;
        in.carried = carried;
        const auto t = deriveTolerance(ToleranceSettings{}, in);
        QVERIFY(near(t.floorMean, 5e-7));
        QCOMPARE(t.carriedMean, 4e-7);
        QVERIFY(near(t.value, 4.0 * (5e-7 + 2.0 * 5e-8)));
    }
    void combiningRule() {
        ToleranceSettings s;
        auto in = input();
        // No floor: analytic, depth 1.
        auto t = deriveTolerance(s, in);
        QCOMPARE(t.source, std::string("analytic"));
        QCOMPARE(t.depth, 1);
        QVERIFY(near(t.value, 4.0 * 1.03 * 0x1p-23));
        QVERIFY(!t.empirical);
        // With a floor: empirical wins, analytic still reported.
        in.floor = NoiseFloor{1e-7, 0.0, 2};
        t = deriveTolerance(s, in);
        QCOMPARE(t.source, std::string("empirical"));
        QVERIFY(near(t.value, 4e-7));
        QVERIFY(near(t.analytic, 4.0 * 1.03 * 0x1p-23));
        QCOMPARE(t.perturbedSamples, 2);
        // The user floor raises it.
        s.floor = 1e-6;
        QCOMPARE(deriveTolerance(s, in).value, 1e-6);
        // --tolerance replaces the derived value; an override beats --tolerance.
        s.global = 1e-3;
        t = deriveTolerance(s, in);
        QCOMPARE(t.value, 1e-3);
        QCOMPARE(t.source, std::string("override"));
        s.overrides.push_back({"layers.*.fc2", std::nullopt, 5e-3});
        s.overrides.push_back({"layers.*", TensorKind::InputGrad, 7e-3}); // other kind
        QCOMPARE(deriveTolerance(s, in).value, 5e-3);
        s.overrides.push_back({"*", TensorKind::ForwardOutput, 9e-3}); // later wins
        QCOMPARE(deriveTolerance(s, in).value, 9e-3);
    }
    void longRowReductionsAddTheirOrderRoundoff() {
        // A weight gradient summed over 8000 rows in another order: u * sqrt(8000) of float32,
        // 4 sigmas of the difference of two runs, next to a floor of a few eps.
        const double u = 0x1p-24;
        const double order = 4.0 * std::sqrt(2.0 * u * u * 8000.0);
        QVERIFY(near(reductionOrderTolerance(8000.0, 0.0, u, u), order));
        auto in = input(TensorKind::ParamGrad);
        in.floor = NoiseFloor{5e-8, 1e-8, 2, 4e-8, 6e-8};
        const double empirical = 4.0 * (5e-8 + 2.0 * 1e-8);
        in.ownReductions = 8000.0;
        auto t = deriveTolerance({}, in);
        QVERIFY(near(*t.empirical, empirical));
        QVERIFY(near(t.reductionOrder, order));
        QVERIFY(near(t.value, std::hypot(empirical, order)));
        QCOMPARE(t.ownReductionLength, 8000.0);
        // Without a reduction of its own the empirical bound stands exactly.
        in.ownReductions = 0.0;
        t = deriveTolerance({}, in);
        QCOMPARE(t.value, empirical);
        QCOMPARE(t.reductionOrder, 0.0);
        // Partial sums rounded to bf16 storage before the data-parallel add.
        const double ub = 0x1p-8;
        QVERIFY(near(reductionOrderTolerance(64.0, 2.0, u, ub),
                     4.0 * std::sqrt(2.0 * (u * u * 64.0 + ub * ub * 2.0))));
    }
    void variantsThatDisagreeMakeAnUnstableFloor() {
        const double errs[] = {3e-3, 7e-6};
        const auto f = noiseFloor(errs);
        QCOMPARE(f.minSample, 7e-6);
        QCOMPARE(f.maxSample, 3e-3);
        const double eps = 0x1p-23;
        QVERIFY(near(floorDisagreement(f, eps), 3e-3 / 7e-6));
        auto in = input();
        in.floor = f;
        auto t = deriveTolerance({}, in);
        QVERIFY(unstableFloor(t));
        QCOMPARE(t.floorMin, 7e-6);
        // A variant the perturbation did not reach counts as one eps, not zero.
        const double zero[] = {0.0, 50.0 * eps};
        QVERIFY(near(floorDisagreement(noiseFloor(zero), eps), 50.0));
        in.floor = noiseFloor(zero);
        QVERIFY(!unstableFloor(deriveTolerance({}, in)));
        // Agreeing samples, a single sample, and a tolerance the floor did not decide.
        const double agree[] = {1e-6, 1.5e-6};
        in.floor = noiseFloor(agree);
        QVERIFY(!unstableFloor(deriveTolerance({}, in)));
        QCOMPARE(floorDisagreement(noiseFloor(std::span<const double>(errs, 1)), eps), 0.0);
        ToleranceSettings global;
        global.global = 1e-3;
        in.floor = f;
        QVERIFY(!unstableFloor(deriveTolerance(global, in)));
    }
    void integerTensorsCompareExactly() {
        ToleranceSettings s;
        s.global = 0.5;
        const auto t = deriveTolerance(s, input(TensorKind::ForwardInput, DType::Int64));
        QCOMPARE(t.value, 0.0);
        QCOMPARE(t.source, std::string("exact"));
    }
    void globMatching() {
        QVERIFY(globMatch("*", "anything.at.all"));
        QVERIFY(globMatch("layers.*.mlp", "layers.10.mlp"));
        QVERIFY(!globMatch("layers.*.mlp", "layers.10.mlp.fc1"));
        QVERIFY(globMatch("layers.?.norm", "layers.3.norm"));
        QVERIFY(!globMatch("layers.?.norm", "layers.13.norm"));
        QVERIFY(globMatch("*fc2", "layers.1.mlp.fc2"));
        QVERIFY(!globMatch("", "x"));
    }
    void parsingOverrides() {
        std::string error;
        auto o = parseToleranceOverride("layers.*.mlp:param_grad=1e-3", error);
        QVERIFY2(o, error.c_str());
        QCOMPARE(o->modulePattern, std::string("layers.*.mlp"));
        QCOMPARE(*o->kind, TensorKind::ParamGrad);
        QCOMPARE(o->value, 1e-3);
        o = parseToleranceOverride("loss=0.01", error);
        QVERIFY(o && !o->kind && o->value == 0.01);
        QVERIFY(!parseToleranceOverride("loss:nonsense=1", error));
        QVERIFY(error.find("unknown tensor kind") != std::string::npos);
        QVERIFY(!parseToleranceOverride("loss=abc", error));
        QVERIFY(!parseToleranceOverride("loss=-1", error));
        QVERIFY(!parseToleranceOverride("no-equals", error));
    }
};

QTEST_GUILESS_MAIN(TestTolerance)
#include "test_tolerance.moc"
