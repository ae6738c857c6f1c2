// Structural divergences: which one-sided or reshaped tensors are a divergence at their module
// (exit 1) and which stay missing or invalid (exit 2), and how the verdict and the JSON report
// carry them.
#include "compare/structure_check.h"
#include "ttrace/compare/report_json.h"
#include "ttrace/compare/verdict.h"

#include <QtTest>

#include <limits>

using namespace ttrace;

namespace {

TensorId id(std::string module, TensorKind kind, std::int64_t iteration = 0) {
    TensorId t;
    t.module = std::move(module);
    t.kind = kind;
    t.iteration = iteration;
    return t;
}

TensorResult result(std::string module, TensorKind kind, double ratio, std::string index = "0") {
    TensorResult t;
    t.id = id(std::move(module), kind);
    t.id.index = std::move(index);
    t.ratio = ratio;
    t.status = verdictFor(ratio);
    return t;
}

} // namespace

class TestStructureCheck : public QObject {
    Q_OBJECT
private slots:
    void oneSidedTensorOfACallBothSidesRan() {
        const ModuleCalls both{{0, 0, "layers.0.proj"}};
        const auto out = id("layers.0.proj", TensorKind::ForwardOutput);
        QCOMPARE(oneSidedChange(out, true, both), StructuralChange::MissingInCandidate);
        QCOMPARE(oneSidedChange(out, false, both), StructuralChange::ExtraInCandidate);
        QCOMPARE(oneSidedChange(id("layers.0.proj", TensorKind::OutputGrad), true, both),
                 StructuralChange::MissingInCandidate);
        // Another iteration, a module one side never ran: the input is not comparable.
        QCOMPARE(oneSidedChange(id("layers.0.proj", TensorKind::ForwardOutput, 1), true, both),
                 StructuralChange::None);
        QCOMPARE(oneSidedChange(id("layers.9", TensorKind::ForwardOutput), true, both),
                 StructuralChange::None);
        // Parameters and optimizer state follow the model and the capture's selection.
        QCOMPARE(oneSidedChange(id("layers.0.proj", TensorKind::OptimizerState), true, both),
                 StructuralChange::None);
        QCOMPARE(oneSidedChange(id("layers.0.proj", TensorKind::ParamGrad), true, both),
                 StructuralChange::None);
    }
    void shapesNoLayoutExplains() {
        const auto out = TensorKind::ForwardOutput;
        QCOMPARE(shapeChange(out, {4, 7, 32}, {28, 32}, 2), StructuralChange::ShapeChanged);
        QCOMPARE(shapeChange(out, {4, 8}, {4, 7}, 2), StructuralChange::ShapeChanged);
        QCOMPARE(shapeChange(out, {4, 8}, {4, 24}, 2), StructuralChange::ShapeChanged);
        QCOMPARE(shapeChange(out, {8, 16}, {8, 32}, 1), StructuralChange::ShapeChanged);
        // What a layout over the ranks could give stays a layout question (invalid).
        QCOMPARE(shapeChange(out, {8, 16}, {4, 32}, 2), StructuralChange::None);
        QCOMPARE(shapeChange(out, {4}, {2}, 4), StructuralChange::None);
        QCOMPARE(shapeChange(out, {4, 8}, {4, 8}, 2), StructuralChange::None);
        QCOMPARE(shapeChange(TensorKind::Parameter, {4, 7}, {28}, 2), StructuralChange::None);
    }
    void namesRoundTrip() {
        for (const auto c : {StructuralChange::None, StructuralChange::MissingInCandidate,
                             StructuralChange::ExtraInCandidate, StructuralChange::ShapeChanged}) {
            QCOMPARE(parseStructuralChange(structuralChangeName(c)).value(), c);
        }
        QVERIFY(!parseStructuralChange("missing"));
    }
    void structuralDivergenceIsADivergenceIntroducedAtItsModule() {
        DiffResult r;
        r.tensors = {result("layers.0.proj", TensorKind::ForwardInput, 0.3),
                     result("layers.0.proj", TensorKind::ForwardOutput, 0.4),
                     result("layers.0.proj", TensorKind::ForwardOutput,
                            std::numeric_limits<double>::infinity(), "1"),
                     result("head", TensorKind::ForwardOutput, 0.2)};
        r.tensors[2].structure = StructuralChange::MissingInCandidate;
        assembleVerdicts(r, {{"layers.0.proj", 0, 0, "Proj", {}}, {"head", 1, 0, "Linear", {}}});
        QCOMPARE(r.summary.divergent, std::size_t{1});
        QCOMPARE(r.summary.structural, std::size_t{1});
        QCOMPARE(r.summary.missing, std::size_t{0});
        QCOMPARE(runVerdict(r), RunVerdict::Divergent);
        QCOMPARE(exitCodeFor(r), 1);
        QCOMPARE(r.module("layers.0.proj")->origin, Origin::Introduced);
        QCOMPARE(r.firstForwardDivergence.value_or(""), std::string("layers.0.proj"));

        std::string error;
        const auto back = diffResultFromJson(diffResultToJson(r, false), error);
        QVERIFY2(back, error.c_str());
        QCOMPARE(back->summary.structural, std::size_t{1});
        QCOMPARE(back->tensors[2].structure, StructuralChange::MissingInCandidate);
        QCOMPARE(back->tensors[1].structure, StructuralChange::None);
    }
};

QTEST_GUILESS_MAIN(TestStructureCheck)
#include "test_structure_check.moc"
