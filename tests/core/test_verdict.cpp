// Verdict logic on synthetic results: statuses, module roll-ups, first divergence, origin.
#include "synthetic_results.h"
#include "ttrace/compare/verdict.h"

#include <QtTest>

#include <limits>

using namespace ttrace;
using ttrace::testing::syntheticTensor;

namespace {

std::vector<ModuleInfo> modules() {
    // Execution order as capture writes it: a layer, then its children as they start.
    return {{"embed", 0, 0, "Embedding", {}},  {"layer", 1, 1, "Layer", {}},
            {"layer.norm", 2, 1, "Norm", {}},  {"layer.fc1", 3, 1, "Linear", {}},
            {"layer.fc2", 4, 1, "Linear", {}}, {"head", 5, 2, "Linear", {}}};
}

} // namespace

class TestVerdict : public QObject {
    Q_OBJECT
private slots:
    void ratiosAndStatuses() {
        QCOMPARE(toleranceRatio(2e-7, 1e-7), 2.0);
        QCOMPARE(toleranceRatio(0.0, 0.0), 0.0);
        QVERIFY(std::isinf(toleranceRatio(1e-9, 0.0))); // exact comparison failed
        QCOMPARE(verdictFor(1.0), Status::Clean);
        QCOMPARE(verdictFor(1.0000001), Status::Divergent);
        QCOMPARE(verdictFor(std::numeric_limits<double>::infinity()), Status::Divergent);
    }
    void originTable() {
        QCOMPARE(classifyOrigin(0.0, 0.5), Origin::None);
        QCOMPARE(classifyOrigin(0.2, 3.0), Origin::Introduced); // clean in, 15x out
        QCOMPARE(classifyOrigin(0.0, 1.5), Origin::Introduced); // exact in, divergent out
        // Near the round-off floor: an input at 0.98 explains an output at 1.004 (not "new").
        QCOMPARE(classifyOrigin(0.98, 1.004), Origin::Inherited);
        QCOMPARE(classifyOrigin(0.9, 3.0), Origin::Inherited);   // within 10x of its input
        QCOMPARE(classifyOrigin(5.0, 40.0), Origin::Inherited);  // 8x < kIntroducedFactor
        QCOMPARE(classifyOrigin(5.0, 60.0), Origin::Introduced); // 12x: a second bug
        QCOMPARE(classifyOrigin(50.0, 20.0), Origin::Inherited);
    }
    void forwardBugInNestedModuleIsFoundAndIntroduced() {
        DiffResult r;
        r.tensors = {
            syntheticTensor("head", TensorKind::ForwardOutput, 300.0), // later: inherits
            syntheticTensor("embed", TensorKind::ForwardOutput, 0.2),
            syntheticTensor("layer", TensorKind::ForwardInput, 0.2),
            syntheticTensor("layer.norm", TensorKind::ForwardOutput, 0.3),
            syntheticTensor("layer.fc1", TensorKind::ForwardOutput, 0.4),
            syntheticTensor("layer.fc2", TensorKind::ForwardInput, 0.4),
            syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 500.0), // the bug
            syntheticTensor("layer", TensorKind::ForwardOutput, 400.0),
            syntheticTensor("layer.fc2", TensorKind::OutputGrad, 90.0), // gradients of a wrong loss
            syntheticTensor("layer.fc1", TensorKind::InputGrad, 80.0),
            syntheticTensor("head", TensorKind::ParamGrad, 70.0),
        };
        r.tensors[0].status = Status::Divergent;
        assembleVerdicts(r, modules());
        // Sorted by execution order.
        QCOMPARE(r.tensors.front().id.module, std::string("embed"));
        QCOMPARE(r.tensors.back().id.module, std::string("head"));
        QCOMPARE(r.modules.size(), std::size_t{6});
        QCOMPARE(r.modules[4].name, std::string("layer.fc2"));
        QCOMPARE(r.modules[4].tensors.size(), std::size_t{3});
        // First forward divergence: "layer" (order 1) diverges first, but its child fc2 does
        // too, so the child is named.
        QCOMPARE(r.firstForwardDivergence.value_or(""), std::string("layer.fc2"));
        // Backward: reverse order, the head's gradient comes first.
        QCOMPARE(r.firstBackwardDivergence.value_or(""), std::string("head"));
        const auto* fc2 = r.module("layer.fc2");
        QCOMPARE(fc2->status, Status::Divergent);
        QCOMPARE(fc2->origin, Origin::Introduced);
        QCOMPARE(fc2->inputRatio, 0.4);
        QCOMPARE(fc2->outputRatio, 500.0);
        // The head's input was not captured: the outputs of modules before it stand in.
        QCOMPARE(r.module("head")->origin, Origin::Inherited);
        QCOMPARE(r.module("head")->inputRatio, 500.0);
        // fc1's forward is clean; its backward consumes fc2's divergent output gradient.
        QCOMPARE(r.module("layer.fc1")->origin, Origin::Inherited);
        QCOMPARE(r.module("embed")->status, Status::Clean);
        QCOMPARE(r.module("embed")->origin, Origin::None);
        QCOMPARE(r.summary.compared, std::size_t{11});
        QCOMPARE(r.summary.divergent, std::size_t{6});
        QCOMPARE(r.summary.maxRatio, 500.0);
        QVERIFY(!r.summary.clean);
    }
    void gradientBugIsIntroducedInBackward() {
        // Forward clean everywhere; fc1's input gradient is wrong although its output gradient
        // is fine: a backward bug introduced in fc1.
        DiffResult r;
        r.tensors = {
            syntheticTensor("layer.fc1", TensorKind::ForwardOutput, 0.5),
            syntheticTensor("layer.fc1", TensorKind::OutputGrad, 0.6),
            syntheticTensor("layer.fc1", TensorKind::InputGrad, 30.0),
            syntheticTensor("layer.norm", TensorKind::OutputGrad, 30.0),
            syntheticTensor("embed", TensorKind::ParamGrad, 25.0),
        };
        assembleVerdicts(r, modules());
        QVERIFY(!r.firstForwardDivergence);
        QCOMPARE(r.firstBackwardDivergence.value_or(""), std::string("layer.fc1"));
        QCOMPARE(r.module("layer.fc1")->origin, Origin::Introduced);
        QCOMPARE(r.module("layer.norm")->origin, Origin::Inherited);
        QCOMPARE(r.module("embed")->origin, Origin::Inherited);
    }
    void laterIterationsInheritThroughParameters() {
        // Iteration 0: only the optimizer output of fc2 diverges (a wrong update);
        // iteration 1: fc2's parameter is wrong, so its forward output inherits.
        DiffResult r;
        r.tensors = {
            syntheticTensor("layer.fc2", TensorKind::ParamGrad, 0.5, 0),
            syntheticTensor("layer.fc2", TensorKind::Parameter, 0.0, 0),
            syntheticTensor("layer.fc2", TensorKind::ParamAfterStep, 50.0, 0),
            syntheticTensor("layer.fc2", TensorKind::Parameter, 50.0, 1),
            syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 40.0, 1),
            syntheticTensor("layer", TensorKind::ForwardInput, 0.3, 1),
            syntheticTensor("layer", TensorKind::ForwardOutput, 40.0, 1),
        };
        assembleVerdicts(r, modules());
        QCOMPARE(r.module("layer.fc2")->origin, Origin::Introduced); // at the optimizer step
        QCOMPARE(r.module("layer.fc2")->outputRatio, 50.0);
        // The layer's own input is clean, but its child's parameter counts as its input.
        QCOMPARE(r.module("layer")->origin, Origin::Inherited);
        QCOMPARE(r.firstForwardDivergence.value_or(""), std::string("layer.fc2"));
    }
    void missingInvalidAndUnknownModules() {
        DiffResult r;
        r.tensors = {syntheticTensor("layer.norm", TensorKind::ForwardOutput, 0.1),
                     syntheticTensor("layer.norm", TensorKind::ForwardInput, 0.0),
                     syntheticTensor("extra.module", TensorKind::ForwardOutput, 0.1)};
        r.tensors[1].status = Status::Missing;
        r.tensors.push_back(syntheticTensor("head", TensorKind::ForwardOutput, 0.0));
        r.tensors.back().status = Status::Invalid;
        assembleVerdicts(r, modules());
        QCOMPARE(r.summary.compared, std::size_t{2});
        QCOMPARE(r.summary.missing, std::size_t{1});
        QCOMPARE(r.summary.invalid, std::size_t{1});
        QVERIFY(!r.summary.clean); // invalid tensors could hide a bug
        QCOMPARE(r.module("layer.norm")->status, Status::Missing);
        QCOMPARE(r.module("head")->status, Status::Invalid);
        QVERIFY(r.module("extra.module"));
        QCOMPARE(r.modules.back().name, std::string("extra.module")); // appended
        const auto worst = worstTensors(r, 2);
        QCOMPARE(worst.size(), std::size_t{2});
        QCOMPARE(r.tensors[worst[0]].status, Status::Invalid);
    }
    void timelineOrdersByIterationPhaseAndOrder() {
        // Iteration 0: forward and backward clean, the norm's and the head's main_grad wrong
        // (a reduction bug); iteration 1: the forward diverges through the updated weights.
        DiffResult r;
        r.tensors = {
            syntheticTensor("embed", TensorKind::ForwardOutput, 40.0, 1),
            syntheticTensor("head", TensorKind::MainGrad, 30.0, 0),
            syntheticTensor("layer.norm", TensorKind::MainGrad, 20.0, 0),
            syntheticTensor("layer.norm", TensorKind::ParamGrad, 0.3, 0),
            syntheticTensor("head", TensorKind::ParamGrad, 0.2, 0),
            syntheticTensor("layer.norm", TensorKind::ParamAfterStep, 50.0, 0),
            syntheticTensor("embed", TensorKind::ForwardOutput, 0.1, 0),
        };
        for (auto& t : r.tensors) {
            t.id.microBatch = t.id.kind == TensorKind::ForwardOutput ? 0 : -1;
        }
        assembleVerdicts(r, modules());
        QVERIFY(r.firstDivergence);
        const auto& f = *r.firstDivergence;
        QCOMPARE(f.iteration, std::int64_t{0});
        QCOMPARE(f.phase, Phase::GradReduction);
        QCOMPARE(f.module, std::string("layer.norm")); // order 2 runs before the head's 5
        QCOMPARE(f.kind, TensorKind::MainGrad);
        QCOMPARE(f.alsoInPhase, std::vector<std::string>{"head"});
        // The timeline lists every flagged tensor in that order: reduction, step, iteration 1.
        std::vector<std::pair<std::string, TensorKind>> order;
        for (const auto i : r.timeline) {
            order.emplace_back(r.tensors[i].id.module, r.tensors[i].id.kind);
        }
        const std::vector<std::pair<std::string, TensorKind>> expected{
            {"layer.norm", TensorKind::MainGrad},
            {"head", TensorKind::MainGrad},
            {"layer.norm", TensorKind::ParamAfterStep},
            {"embed", TensorKind::ForwardOutput}};
        QCOMPARE(order, expected);
        // The forward-only view still names iteration 1's embedding.
        QCOMPARE(r.firstForwardDivergence.value_or(""), std::string("embed"));
        QCOMPARE(r.module("layer.norm")->origin, Origin::Introduced); // param_grad clean
    }
    void invalidNeighbourNeverHidesTheFirstDivergence() {
        // A scaled row-parallel partial in fc2: its own output is invalid (a layout the merge
        // cannot rebuild), its consumers diverge. The headline stays the first *comparable*
        // divergence, and the report says that an earlier tensor was not compared, and why.
        DiffResult r;
        r.tensors = {
            syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 0.0),
            syntheticTensor("head", TensorKind::ForwardOutput, 80.0),
            syntheticTensor("layer.norm", TensorKind::ForwardOutput, 0.2),
        };
        r.tensors[0].status = Status::Invalid;
        r.tensors[0].invalid.referenceShape = "[4, 8]";
        r.tensors[0].invalid.candidateShape = "[8, 8]";
        assembleVerdicts(r, modules());
        QVERIFY(r.firstDivergence);
        QCOMPARE(r.firstDivergence->module, std::string("head"));
        QVERIFY(r.earlierUncompared);
        QCOMPARE(r.tensors[*r.earlierUncompared].id.module, std::string("layer.fc2"));
        const auto text = earlierUncomparedText(r);
        QVERIFY2(text.find("layer.fc2") != std::string::npos, text.c_str());
        QVERIFY2(text.find("invalid, earlier than the first divergence") != std::string::npos,
                 text.c_str());
        QVERIFY2(text.find("[8, 8]") != std::string::npos, text.c_str());
        // An invalid tensor after the first divergence is not "earlier".
        auto& invalid = r.tensors[*r.earlierUncompared]; // assembleVerdicts sorts the tensors
        invalid.id.module = "head";
        invalid.id.kind = TensorKind::OutputGrad;
        assembleVerdicts(r, modules());
        QVERIFY(!r.earlierUncompared);
        QVERIFY(earlierUncomparedText(r).empty());
    }
    void wrongBackwardSeedIsIntroducedAtTheLastModule() {
        // The schedule scales the loss gradient: the last module's output gradient is wrong
        // although no module produced it, and everything before inherits.
        DiffResult r;
        r.tensors = {
            syntheticTensor("head", TensorKind::ForwardOutput, 0.2),
            syntheticTensor("head", TensorKind::OutputGrad, 900.0),
            syntheticTensor("head", TensorKind::InputGrad, 900.0),
            syntheticTensor("layer.fc2", TensorKind::OutputGrad, 850.0),
            syntheticTensor("layer.fc2", TensorKind::InputGrad, 800.0),
        };
        assembleVerdicts(r, modules());
        QCOMPARE(r.module("head")->origin, Origin::Introduced);
        QCOMPARE(r.module("layer.fc2")->origin, Origin::Inherited);
    }
    void severityOrderAndExitCodes() {
        QVERIFY(severity(Status::Invalid) > severity(Status::Missing));
        QVERIFY(severity(Status::Missing) > severity(Status::Divergent));
        QVERIFY(severity(Status::Divergent) > severity(Status::Clean));
        QVERIFY(isFlagged(Status::Divergent) && isFlagged(Status::Invalid));
        QVERIFY(isFlagged(Status::Missing) && !isFlagged(Status::Clean));
        auto verdictOf = [](std::vector<Status> statuses) {
            DiffResult r;
            for (const auto st : statuses) {
                r.tensors.push_back(syntheticTensor("layer.fc1", TensorKind::ForwardOutput, 0.5));
                r.tensors.back().status = st;
                r.tensors.back().ratio = st == Status::Divergent ? 5.0 : 0.5;
            }
            assembleVerdicts(r, modules());
            return std::make_pair(exitCodeFor(r), std::string(runVerdictName(runVerdict(r))));
        };
        using V = std::pair<int, std::string>;
        QCOMPARE(verdictOf({Status::Clean}), V(0, "clean"));
        QCOMPARE(verdictOf({Status::Clean, Status::Divergent}), V(1, "divergent"));
        QCOMPARE(verdictOf({Status::Divergent, Status::Invalid}), V(2, "invalid"));
        QCOMPARE(verdictOf({Status::Clean, Status::Missing}), V(2, "invalid"));
        DiffResult broken;
        broken.diagnostics.push_back(makeError("missing-rank-file", "candidate", "gone"));
        assembleVerdicts(broken, modules());
        QCOMPARE(exitCodeFor(broken), 2);
        // A module is as bad as its worst tensor in the same order: invalid beats divergent.
        DiffResult r;
        r.tensors = {syntheticTensor("layer.fc1", TensorKind::ForwardOutput, 5.0),
                     syntheticTensor("layer.fc1", TensorKind::ForwardInput, 0.0)};
        r.tensors[1].status = Status::Invalid;
        assembleVerdicts(r, modules());
        QCOMPARE(r.module("layer.fc1")->status, Status::Invalid);
    }
    void unstableFloorsMakeSmallRatiosProvisional() {
        Tolerance unstable;
        unstable.source = ToleranceSource::Empirical;
        unstable.floorDisagreement = 430.0;
        QVERIFY(unstableFloor(unstable));
        QCOMPARE(tensorVerdict(0.9, unstable), Status::Clean);
        QCOMPARE(tensorVerdict(2.26, unstable), Status::Clean); // provisional
        QVERIFY(unstableOverBound(2.26, unstable));
        QCOMPARE(tensorVerdict(431.0, unstable), Status::Divergent); // beyond the disagreement
        QCOMPARE(tensorVerdict(1e5, unstable), Status::Divergent);   // a zoo bug
        Tolerance stable = unstable;
        stable.floorDisagreement = 3.0;
        QCOMPARE(tensorVerdict(2.26, stable), Status::Divergent);
        // Counted apart; alone they make the run unresolved (exit 3), never clean.
        auto run = [&](double otherRatio) {
            DiffResult r;
            r.tensors = {syntheticTensor("layer.fc1", TensorKind::ForwardOutput, 2.26),
                         syntheticTensor("head", TensorKind::ForwardOutput, otherRatio)};
            r.tensors[0].tolerance = unstable;
            for (auto& t : r.tensors) {
                t.status = tensorVerdict(t.ratio, t.tolerance);
            }
            assembleVerdicts(r, modules());
            return r;
        };
        auto r = run(0.5);
        QCOMPARE(r.summary.unstableFloors, std::size_t{1});
        QCOMPARE(r.summary.unstableOverBound, std::size_t{1});
        QCOMPARE(r.summary.unstableMaxRatio, 2.26);
        QCOMPARE(r.summary.maxRatio, 0.5);
        QCOMPARE(r.summary.divergent, std::size_t{0});
        QCOMPARE(exitCodeFor(r), 3);
        QVERIFY(!r.firstForwardDivergence);
        // A confident divergence elsewhere still decides the run.
        r = run(5.0);
        QCOMPARE(exitCodeFor(r), 1);
        QCOMPARE(*r.firstForwardDivergence, std::string("head"));
    }
    void cleanRunIsClean() {
        DiffResult r;
        r.tensors = {syntheticTensor("embed", TensorKind::ForwardOutput, 0.9),
                     syntheticTensor("head", TensorKind::ParamGrad, 1.0)};
        assembleVerdicts(r, modules());
        QVERIFY(r.summary.clean);
        QVERIFY(!r.firstForwardDivergence && !r.firstBackwardDivergence);
        QCOMPARE(r.summary.maxRatio, 1.0);
    }
};

QTEST_GUILESS_MAIN(TestVerdict)
#include "test_verdict.moc"
