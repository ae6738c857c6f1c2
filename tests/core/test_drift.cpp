// Drift across versions and kernels (drift.h, environment_diff.h) on synthetic manifests and
// results: what differs is named, drift is allowed only where a kernel or version changed and
// only within the bound, and a bug stays divergent.
#include "synthetic_results.h"
#include "ttrace/compare/drift.h"
#include "ttrace/compare/environment_diff.h"
#include "ttrace/compare/verdict.h"
#include "ttrace/io/manifest.h"
#include "ttrace/io/verdict_notes.h"
#include "ttrace/report/verdict_text.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace ttrace;
using ttrace::testing::syntheticTensor;

namespace {

std::vector<ModuleInfo> modules() {
    return {{"embed", 0, 0, "Embedding", {}},
            {"layer", 1, 1, "Layer", {}},
            {"layer.attn", 2, 1, "Attention", {}},
            {"layer.mlp", 3, 1, "MLP", {}},
            {"head", 4, 2, "Linear", {}}};
}

Manifest manifest(const std::string& torch, const std::string& attnTag) {
    Manifest m;
    RunEnvironment e;
    e.versions = {{"python", "3.11.7"}, {"torch", torch}, {"ttrace", "0.1.0"}};
    e.devices = {"cpu (x86_64)"};
    e.backends = {{"cuda.flash_sdp", "true"}};
    for (const auto& info : modules()) {
        e.kernels[info.name] = {"examples." + info.type, "ab12", "", ""};
    }
    e.kernels["layer.attn"].tag = attnTag;
    m.environment = e;
    return m;
}

// A kernel change at layer.attn (ratio 3) inherited by what follows it (forward and backward).
DiffResult driftingRun(double attnRatio) {
    DiffResult r;
    r.tensors = {
        syntheticTensor("embed", TensorKind::ForwardOutput, 0.2),
        syntheticTensor("layer.attn", TensorKind::ForwardInput, 0.2),
        syntheticTensor("layer.attn", TensorKind::ForwardOutput, attnRatio),
        syntheticTensor("layer.mlp", TensorKind::ForwardInput, attnRatio),
        syntheticTensor("layer.mlp", TensorKind::ForwardOutput, 2.5),
        syntheticTensor("layer", TensorKind::ForwardOutput, 2.5),
        syntheticTensor("head", TensorKind::ForwardOutput, 2.0),
    };
    assembleVerdicts(r, modules());
    return r;
}

// A one-rank manifest with `environment` as its environment section (JSON text).
std::filesystem::path writeManifest(const QTemporaryDir& dir, const std::string& environment) {
    const std::filesystem::path root = dir.path().toStdString();
    std::ofstream(root / "manifest.json")
        << R"({"format": "ttrace-bundle", "format_version": 1, "role": "reference",
              "variants": ["nominal"], "world_size": 1, "precision": "fp32",
              "modules": [{"name": "fc", "order": 0, "depth": 1, "type": "Linear"}],
              "iterations": [0], "micro_batches": 1,
              "ranks": [{"rank": 0, "file": "rank-00000.h5"}], "environment": )"
        << environment << "}";
    return root;
}

} // namespace

class TestDrift : public QObject {
    Q_OBJECT
private slots:
    void sameEnvironmentAllowsNoDrift() {
        const auto d = environmentDiff(manifest("2.13.0", "attention=einsum"),
                                       manifest("2.13.0", "attention=einsum"));
        QVERIFY(d.changes.empty());
        QVERIFY(!d.allowsDrift("layer.attn"));
        auto r = driftingRun(3.0);
        QCOMPARE(applyDrift(r, d, modules()), std::size_t{0});
        QCOMPARE(r.summary.divergent, std::size_t{5});
        QCOMPARE(r.summary.driftBound, 0.0);
        QCOMPARE(runVerdict(r), RunVerdict::Divergent);
    }
    void olderBundleWithoutEnvironmentAllowsNoDrift() {
        Manifest old;
        const auto d = environmentDiff(old, manifest("2.14.0", "attention=sdpa"));
        QVERIFY(!d.candidateRecorded || !d.referenceRecorded);
        QVERIFY(d.changes.empty());
        auto r = driftingRun(3.0);
        QCOMPARE(applyDrift(r, d, modules()), std::size_t{0});
        QCOMPARE(environmentText(r.summary),
                 std::string("not recorded by both captures: no drift allowed"));
    }
    void changesAreNamedWithTheirScope() {
        auto a = manifest("2.13.0", "attention=einsum");
        auto b = manifest("2.14.0", "attention=sdpa");
        b.environment->versions["python"] = "3.12.3";
        b.environment->devices = {"NVIDIA H200"};
        const auto d = environmentDiff(a, b);
        QStringList lines;
        for (const auto& c : d.changes) {
            lines << QString::fromStdString(c.toString());
        }
        QVERIFY2(lines.contains("python version: 3.11.7 (reference) vs 3.12.3 (candidate)"),
                 qPrintable(lines.join('\n')));
        QVERIFY(lines.contains("torch version: 2.13.0 (reference) vs 2.14.0 (candidate)"));
        QVERIFY(lines.contains("device: cpu (x86_64) (reference) vs NVIDIA H200 (candidate)"));
        QVERIFY(lines.contains(
            "layer.attn kernel tag: attention=einsum (reference) vs attention=sdpa (candidate)"));
        QVERIFY(d.runWide());
        // Python alone changes no kernel.
        auto c = manifest("2.13.0", "attention=einsum");
        c.environment->versions["python"] = "3.12.3";
        QVERIFY(!environmentDiff(a, c).runWide());
        QVERIFY(!environmentDiff(a, c).allowsDrift("layer.attn"));
        // Nor do thread counts (torchrun sets OMP_NUM_THREADS, one process does not): they
        // reorder reductions, which the tolerance covers.
        auto threads = manifest("2.13.0", "attention=einsum");
        threads.environment->env["OMP_NUM_THREADS"] = "1";
        threads.environment->backends["intra_op_threads"] = "1";
        const auto t = environmentDiff(a, threads);
        QCOMPARE(t.changes.size(), std::size_t{2});
        QVERIFY(!t.runWide() && !t.allowsDrift("layer.mlp"));
        // A kernel switch does.
        auto tf32 = manifest("2.13.0", "attention=einsum");
        tf32.environment->backends["cuda.matmul.allow_tf32"] = "true";
        QVERIFY(environmentDiff(a, tf32).runWide());
    }
    void threadCountsAreInformationNotAWarning() {
        // torchrun sets OMP_NUM_THREADS, a single process does not: a correct same-machine
        // pair differs there, and the report must say so as information only.
        const auto a = manifest("2.13.0", "attention=einsum");
        auto threads = manifest("2.13.0", "attention=einsum");
        threads.environment->env["OMP_NUM_THREADS"] = "1";
        threads.environment->backends["intra_op_threads"] = "4";
        const auto t = environmentDiff(a, threads);
        QCOMPARE(t.changes.size(), std::size_t{2});
        QVERIFY(!t.mayChangeKernels());
        auto r = driftingRun(3.0);
        QCOMPARE(applyDrift(r, t, modules()), std::size_t{0});
        const auto text = QString::fromStdString(environmentText(r.summary));
        QVERIFY2(text.startsWith("only settings that cannot change a kernel differ ("),
                 qPrintable(text));
        QVERIFY2(text.contains("environment variable OMP_NUM_THREADS: absent (reference) vs 1 "
                               "(candidate)") &&
                     text.endsWith("): no drift allowed"),
                 qPrintable(text));
        // A kernel switch or a module's own kernel may change kernels: worth a warning.
        auto tf32 = threads;
        tf32.environment->backends["cuda.matmul.allow_tf32"] = "true";
        QVERIFY(environmentDiff(a, tf32).mayChangeKernels());
        const auto tagged = environmentDiff(a, manifest("2.13.0", "attention=sdpa"));
        QVERIFY(tagged.mayChangeKernels() && !tagged.runWide());
        auto tr = driftingRun(3.0);
        applyDrift(tr, tagged, modules());
        QVERIFY(!QString::fromStdString(environmentText(tr.summary)).startsWith("only"));
    }
    void malformedEnvironmentIsOneWarningNamingFileAndField_data() {
        QTest::addColumn<QString>("environment");
        QTest::addColumn<QString>("field");
        QTest::newRow("not an object") << R"("cpu")"
                                       << "'environment' is not an object";
        QTest::newRow("versions not an object") << R"({"versions": ["2.13"]})"
                                                << "'environment.versions' is not an object";
        QTest::newRow("a version a number") << R"({"versions": {"torch": 2.13}})"
                                            << "'environment.versions.torch'";
        QTest::newRow("a switch an array") << R"({"backends": {"cuda.flash_sdp": [true]}})"
                                           << "'environment.backends.cuda.flash_sdp'";
        QTest::newRow("devices a string") << R"({"devices": "cpu"})"
                                          << "'environment.devices' is not an array";
        QTest::newRow("a device a number") << R"({"devices": ["cpu", 3]})"
                                           << "'environment.devices[1]' is not a string";
        QTest::newRow("a kernel without class") << R"({"kernels": {"fc": {"tag": "x"}}})"
                                                << "'environment.kernels.fc.class'";
        QTest::newRow("a kernel tag a number")
            << R"({"kernels": {"fc": {"class": "torch.nn.Linear", "tag": 7}}})"
            << "'environment.kernels.fc.tag' is not a string";
    }
    void malformedEnvironmentIsOneWarningNamingFileAndField() {
        QFETCH(QString, environment);
        QFETCH(QString, field);
        QTemporaryDir dir;
        const auto root = writeManifest(dir, environment.toStdString());
        Diagnostics d;
        const auto m = readManifest(root, d);
        // The run still opens, compared as one that recorded no environment (no drift).
        QVERIFY(m.has_value());
        QVERIFY(!m->environment.has_value());
        QCOMPARE(d.size(), std::size_t{1});
        QVERIFY(d[0].code == DiagnosticCode::ManifestEnvironment);
        QCOMPARE(d[0].severity, Severity::Warning);
        QVERIFY2(d[0].location == (root / "manifest.json").string(), d[0].location.c_str());
        QVERIFY2(QString::fromStdString(d[0].message).contains(field), d[0].message.c_str());
    }
    void verdictNotesAreNoOpeningProblems() {
        const Diagnostics found = {
            makeWarning(DiagnosticCode::ManifestEnvironment, "ref/manifest.json", "malformed"),
            makeWarning(DiagnosticCode::KernelDrift, "cand", "drift"),
            makeWarning(DiagnosticCode::EnvironmentDiffers, "cand", "torch"),
            makeError(DiagnosticCode::Hole, "cand/rank-00001.h5", "hole")};
        const auto opening = openingProblems(found);
        QCOMPARE(opening.size(), std::size_t{2});
        QVERIFY(opening[0].code == DiagnosticCode::ManifestEnvironment);
        QVERIFY(opening[1].code == DiagnosticCode::Hole);
    }
    void kernelTagAllowsDriftAtItsModuleAndInheritedDownstream() {
        const auto d = environmentDiff(manifest("2.13.0", "attention=einsum"),
                                       manifest("2.13.0", "attention=sdpa"));
        QVERIFY(!d.runWide());
        QVERIFY(d.allowsDrift("layer.attn"));
        QVERIFY(d.allowsDrift("layer")); // runs the changed kernel inside it
        QVERIFY(!d.allowsDrift("layer.mlp"));
        auto r = driftingRun(3.0);
        QCOMPARE(applyDrift(r, d, modules()), std::size_t{5});
        QCOMPARE(r.summary.divergent, std::size_t{0});
        QCOMPARE(r.summary.drift, std::size_t{5});
        QCOMPARE(r.summary.driftMaxRatio, 3.0);
        QCOMPARE(r.summary.driftBound, kDriftBound);
        QCOMPARE(r.module("layer.attn")->status, Status::Drift);
        QCOMPARE(r.module("layer.attn")->origin, Origin::Drift);
        QCOMPARE(r.module("layer.mlp")->status, Status::Drift);
        QCOMPARE(r.module("layer.mlp")->origin, Origin::Inherited);
        QCOMPARE(runVerdict(r), RunVerdict::Drift);
        QCOMPARE(exitCodeFor(r), 0);
        QVERIFY(verdictLine(r).starts_with("DRIFT: "));
        QVERIFY(!r.firstDivergence.has_value());
    }
    void driftBeyondTheBoundStaysDivergent() {
        const auto d = environmentDiff(manifest("2.13.0", "attention=einsum"),
                                       manifest("2.13.0", "attention=tf32"));
        auto r = driftingRun(520.0); // TF32 under FP32: a change of precision
        applyDrift(r, d, modules());
        QCOMPARE(r.module("layer.attn")->status, Status::Divergent);
        QCOMPARE(runVerdict(r), RunVerdict::Divergent);
    }
    void aBugElsewhereStaysDivergentAndKeepsItsInheritors() {
        const auto d = environmentDiff(manifest("2.13.0", "attention=einsum"),
                                       manifest("2.13.0", "attention=sdpa"));
        DiffResult r;
        r.tensors = {
            syntheticTensor("embed", TensorKind::ForwardOutput, 0.2),
            syntheticTensor("layer.attn", TensorKind::ForwardInput, 0.2),
            syntheticTensor("layer.attn", TensorKind::ForwardOutput, 0.5),
            syntheticTensor("layer.mlp", TensorKind::ForwardInput, 0.5),
            syntheticTensor("layer.mlp", TensorKind::ForwardOutput, 8.0), // the bug, < bound
            syntheticTensor("head", TensorKind::ForwardOutput, 7.0),
        };
        assembleVerdicts(r, modules());
        applyDrift(r, d, modules());
        QCOMPARE(r.module("layer.mlp")->status, Status::Divergent);
        QCOMPARE(r.module("layer.mlp")->origin, Origin::Introduced);
        QCOMPARE(r.module("head")->status, Status::Divergent);
        QCOMPARE(r.summary.drift, std::size_t{0});
        QCOMPARE(r.firstForwardDivergence.value_or(""), std::string("layer.mlp"));
        QCOMPARE(runVerdict(r), RunVerdict::Divergent);
    }
    void driftBeforeABugOnTheTimelineStaysDriftAndAfterItIsDivergent() {
        const auto d = environmentDiff(manifest("2.13.0", "attention=einsum"),
                                       manifest("2.13.0", "attention=sdpa"));
        auto r = driftingRun(3.0); // iteration 0 forward: drift from layer.attn
        // A gradient-reduction bug in iteration 0, and what iteration 1 then inherits.
        r.tensors.push_back(syntheticTensor("embed", TensorKind::MainGrad, 1e5));
        r.tensors.push_back(syntheticTensor("embed", TensorKind::ForwardOutput, 5.0, 1));
        r.tensors.push_back(syntheticTensor("layer.mlp", TensorKind::ForwardOutput, 4.0, 1));
        assembleVerdicts(r, modules());
        applyDrift(r, d, modules());
        QCOMPARE(r.module("layer.attn")->origin, Origin::Drift);
        for (const auto& t : r.tensors) {
            const bool after = t.id.iteration == 1 || t.id.kind == TensorKind::MainGrad;
            QCOMPARE(t.status == Status::Divergent, after);
        }
        QVERIFY(r.firstDivergence.has_value());
        QCOMPARE(r.firstDivergence->module, std::string("embed"));
        QCOMPARE(r.firstDivergence->kind, TensorKind::MainGrad);
        QCOMPARE(runVerdict(r), RunVerdict::Divergent);
    }
    void runWideChangeAllowsDriftEverywhere() {
        const auto d = environmentDiff(manifest("2.13.0", "attention=einsum"),
                                       manifest("2.14.0", "attention=einsum"));
        QVERIFY(d.allowsDrift("layer.mlp") && d.allowsDrift("head"));
        auto r = driftingRun(3.0);
        QCOMPARE(applyDrift(r, d, modules()), std::size_t{5});
        QCOMPARE(r.module("layer.mlp")->origin, Origin::Inherited); // its inputs explain it
        QCOMPARE(r.module("layer.attn")->origin, Origin::Drift);
    }
};

QTEST_GUILESS_MAIN(TestDrift)
#include "test_drift.moc"
