// The verdict in words and the origin on incomplete evidence, on synthetic results: a refused
// pair says why and nothing else; invalid tensors before the first divergence make the verdict
// "incomplete", naming the bundle error; a module whose input could not be compared is never
// said to introduce (or merely inherit) the divergence.
#include "synthetic_results.h"
#include "ttrace/compare/verdict.h"
#include "ttrace/io/parallel_layout_text.h"
#include "ttrace/report/report_markdown.h"
#include "ttrace/report/verdict_text.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace ttrace;
using ttrace::testing::syntheticTensor;

namespace {

std::vector<ModuleInfo> modules() {
    return {{"embed", 0, 0, "Embedding", {}},
            {"layer.fc1", 1, 1, "Linear", {}},
            {"layer.fc2", 2, 1, "Linear", {}},
            {"head", 3, 2, "Linear", {}}};
}

} // namespace

class TestVerdictText : public QObject {
    Q_OBJECT
private slots:
    // The layouts in words: the shared case table the agent's Python wording is held to too
    // (python/tests/test_parallel_layout_text.py), so both say every layout the same way.
    void layoutWordsMatchTheSharedCases() {
        QFile file(QStringLiteral(TTRACE_LAYOUT_CASES));
        QVERIFY2(file.open(QIODevice::ReadOnly), TTRACE_LAYOUT_CASES);
        const auto cases = QJsonDocument::fromJson(file.readAll()).object()["cases"].toArray();
        QVERIFY(cases.size() >= 10);
        for (const auto& value : cases) {
            const auto c = value.toObject();
            std::map<std::string, int> parallel;
            const auto sizes = c["parallel"].toObject();
            for (auto it = sizes.begin(); it != sizes.end(); ++it) {
                parallel[it.key().toStdString()] = it.value().toInt();
            }
            const auto text = parallelLayoutText(parallel, c["world_size"].toInt());
            QCOMPARE(QString::fromStdString(text), c["text"].toString());
        }
    }
    void refusedPairSaysWhyOnly() {
        DiffResult r;
        r.summary.clean = false;
        r.diagnostics = {makeWarning("unknown-module", "a/manifest.json", "module 'x' ..."),
                         makeError("swapped-roles", "cand",
                                   "the bundles are given in the wrong order: give the "
                                   "reference first")};
        const auto refusal = pairRefusal(r.diagnostics);
        QVERIFY(refusal);
        QCOMPARE(refusal->problem, PairProblem::SwappedRoles);
        QCOMPARE(verdictLine(r), std::string("INVALID: not compared: cand: the bundles are given "
                                             "in the wrong order: give the reference first"));
        QVERIFY(incompleteVerdictText(r).empty());
        QCOMPARE(exitCodeFor(r), 2);
        QVERIFY(!pairRefusal({makeError("truncated-file", "rank 2", "copy it again")}));
        // Another model's reference is compared: its differing tensors come out invalid.
        QVERIFY(!pairRefusal({makeError("different-model", "tensor x", "another model")}));
    }
    void invalidInputIsNeitherBlamedNorCleared() {
        // fc2's input is invalid (a rank file is gone), its output diverges: the missing
        // partial sum, not fc2, may be the cause.
        DiffResult r;
        r.tensors = {
            syntheticTensor("embed", TensorKind::ForwardOutput, 0.1),
            syntheticTensor("layer.fc2", TensorKind::ForwardInput, 0.0),
            syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 5e4),
            syntheticTensor("head", TensorKind::ForwardOutput, 6e4),
        };
        r.tensors[1].status = Status::Invalid;
        r.tensors[1].findings = {makeError("hole", "tensor x",
                                           "hole: 64 of 256 elements are "
                                           "covered by no shard (ranks "
                                           "present: 0, 1, 3)")};
        r.tensors[1].invalid.referenceShape = "[8, 32]";
        r.tensors[1].invalid.candidateShape = "[8, 32]";
        r.diagnostics = {makeError("truncated-file", "candidate rank 2 (c/rank-00002.h5)",
                                   "rank-00002.h5 is truncated; copy it again")};
        assembleVerdicts(r, modules());
        QCOMPARE(r.module("layer.fc2")->origin, Origin::Undetermined);
        QCOMPARE(r.module("head")->origin, Origin::Undetermined);
        QCOMPARE(originName(Origin::Undetermined), std::string_view("undetermined"));
        const auto text = incompleteVerdictText(r);
        QVERIFY2(text.starts_with("Verdict incomplete: candidate rank 2 (c/rank-00002.h5): "
                                  "rank-00002.h5 is truncated"),
                 text.c_str());
        // The hole (what is absent) names the ranks; equal shapes are not given as a reason.
        QVERIFY2(text.find("ranks present: 0, 1, 3") != std::string::npos, text.c_str());
        QVERIFY2(text.find("reference shape") == std::string::npos, text.c_str());
        QVERIFY(verdictLine(r).starts_with("INVALID: 1 invalid, 0 missing tensors, bundle errors"));
    }
    void validInputsStillIntroduce() {
        DiffResult r;
        r.tensors = {
            syntheticTensor("layer.fc2", TensorKind::ForwardInput, 0.2),
            syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 5e4),
            syntheticTensor("head", TensorKind::ForwardOutput, 6e4),
        };
        assembleVerdicts(r, modules());
        QCOMPARE(r.module("layer.fc2")->origin, Origin::Introduced);
        QCOMPARE(r.module("head")->origin, Origin::Inherited);
        QVERIFY(incompleteVerdictText(r).empty());
        QCOMPARE(verdictLine(r),
                 std::string("DIVERGENT: 2 tensors diverge beyond round-off; every tensor was "
                             "valid"));
    }
    void provisionalTensorsAreNeitherCleanNorDivergent() {
        // A reference without perturbed variants: iteration 1 is judged by a provisional
        // analytic bound. Its tensor over the bound is no divergence, and every text says so.
        DiffResult r;
        r.tensors = {
            syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 0.3),
            syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 2.5, 1),
            syntheticTensor("head", TensorKind::ParamAfterStep, 0.5),
        };
        r.tensors[1].tolerance.provisional = Provisional::CarriedState;
        r.tensors[1].status = tensorVerdict(2.5, r.tensors[1].tolerance);
        r.tensors[2].tolerance.provisional = Provisional::OptimizerStep;
        QCOMPARE(r.tensors[1].status, Status::Clean);
        assembleVerdicts(r, modules());
        QCOMPARE(r.summary.divergent, std::size_t{0});
        QCOMPARE(r.summary.provisional, std::size_t{2});
        QCOMPARE(r.summary.provisionalOverBound, std::size_t{1});
        QCOMPARE(r.summary.provisionalMaxRatio, 2.5);
        QCOMPARE(r.summary.maxRatio, 0.3); // only what is judged with confidence
        // Over its provisional bound: neither clean nor divergent, the run is unresolved.
        QCOMPARE(exitCodeFor(r), 3);
        const auto line = verdictLine(r);
        QVERIFY2(line.starts_with("UNRESOLVED: 1 provisional tensors exceed their analytic "
                                  "bound") &&
                     line.ends_with("2 tensors provisional (analytic bound only), 1 over it"),
                 line.c_str());
        const auto text = provisionalVerdictText(r);
        QVERIFY2(text.starts_with("Provisional (analytic bound only): 2 tensors") &&
                     text.find("1 exceed the provisional bound (max ratio 2.5)") !=
                         std::string::npos,
                 text.c_str());
        QCOMPARE(verdictCaveat(r), text); // the explorer's caveat line
        QCOMPARE(tensorVerdictName(r.tensors[1]), std::string_view("provisional"));
        QCOMPARE(tensorVerdictName(r.tensors[0]), std::string_view("clean"));
        // Within their provisional bounds the run is clean, and says on what.
        r.tensors[1].ratio = 0.5;
        assembleVerdicts(r, modules());
        QCOMPARE(exitCodeFor(r), 0);
        QVERIFY2(
            verdictLine(r).starts_with("CLEAN (provisional): ") &&
                verdictLine(r).ends_with("2 tensors provisional (analytic bound only), 0 over it"),
            verdictLine(r).c_str());
        // A confident divergence stays one, with the provisional count beside it.
        r.tensors[0].ratio = 40.0;
        r.tensors[0].status = tensorVerdict(40.0, r.tensors[0].tolerance);
        assembleVerdicts(r, modules());
        QCOMPARE(exitCodeFor(r), 1);
        QVERIFY(verdictLine(r).starts_with("DIVERGENT: 1 tensors diverge"));
        QCOMPARE(provisionalName(Provisional::OptimizerStep), std::string_view("optimizer_step"));
    }
    void unstableFloorsAreSaidInEveryText() {
        // One tensor over a floor whose variants disagree 430x: provisional, and every text
        // says how many floors are unstable and what settles them.
        DiffResult r;
        r.tensors = {syntheticTensor("layer.fc2", TensorKind::ForwardOutput, 2.26),
                     syntheticTensor("head", TensorKind::ForwardOutput, 0.4)};
        r.tensors[0].tolerance.source = ToleranceSource::Empirical;
        r.tensors[0].tolerance.floorDisagreement = 430.0;
        r.tensors[0].status = tensorVerdict(2.26, r.tensors[0].tolerance);
        assembleVerdicts(r, modules());
        QCOMPARE(exitCodeFor(r), 3);
        const auto line = verdictLine(r);
        QVERIFY2(line.starts_with("UNRESOLVED: 1 tensor exceeds a floor whose perturbed "
                                  "variants disagree by more than 100x"),
                 line.c_str());
        const auto text = unstableFloorText(r);
        QVERIFY2(text.starts_with("1 tensor's floor rests on variants that disagree by more "
                                  "than 100x: capture more variants (--perturbations N); 1 of "
                                  "them exceeds its tolerance") &&
                     text.find("(max ratio 2.26)") != std::string::npos,
                 text.c_str());
        QCOMPARE(verdictCaveat(r), text);
        QCOMPARE(tensorVerdictName(r.tensors[0]), std::string_view("provisional"));
        QVERIFY(diffResultToMarkdown(r).find(text) != std::string::npos);
        // Within its tolerance it is clean, and the count still says to capture more.
        r.tensors[0].ratio = 0.5;
        r.tensors[0].status = tensorVerdict(0.5, r.tensors[0].tolerance);
        assembleVerdicts(r, modules());
        QCOMPARE(exitCodeFor(r), 0);
        QVERIFY(unstableFloorText(r).starts_with("1 tensor's floor rests"));
        QCOMPARE(tensorVerdictName(r.tensors[0]), std::string_view("clean"));
    }
};

QTEST_APPLESS_MAIN(TestVerdictText)
#include "test_verdict_text.moc"
