// The verdict in words and the origin on incomplete evidence, on synthetic results: a refused
// pair says why and nothing else; invalid tensors before the first divergence make the verdict
// "incomplete", naming the bundle error; a module whose input could not be compared is never
// said to introduce (or merely inherit) the divergence.
#include "synthetic_results.h"
#include "ttrace/verdict.h"
#include "ttrace/verdict_text.h"

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
        QVERIFY(!pairRefusal({makeError("truncated", "rank 2", "copy it again")}));
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
        r.diagnostics = {makeError("truncated", "candidate rank 2 (c/rank-00002.h5)",
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
};

QTEST_APPLESS_MAIN(TestVerdictText)
#include "test_verdict_text.moc"
