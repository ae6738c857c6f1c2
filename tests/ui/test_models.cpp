// The explorer's models without widgets: layer tree (metadata first, streamed results, final
// results, step filter, divergence navigation), filter proxy, stats table, Markdown report and
// recent files. Every model and proxy runs under QAbstractItemModelTester.
#include "ttrace/ui/models/layer_filter_proxy.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/markdown_report.h"
#include "ttrace/ui/models/number_format.h"
#include "ttrace/ui/models/recent_bundles.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/stats_table_model.h"

#include <QAbstractItemModelTester>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

using namespace ttrace;
using namespace ttrace::ui;

namespace {

std::vector<ModuleInfo> modules() {
    return {
        {"embedding", 0, 0, "Embedding", {}},     {"layers.0", 1, 1, "Layer", {}},
        {"layers.0.attn", 2, 1, "Attention", {}}, {"layers.0.mlp.fc1", 3, 1, "Linear", {}},
        {"layers.0.mlp.fc2", 4, 1, "Linear", {}}, {"layers.1", 5, 2, "Layer", {}},
        {"layers.1.mlp.fc2", 6, 2, "Linear", {}}, {"loss", 7, 3, "Loss", {}},
    };
}

TensorResult result(const std::string& module, TensorKind kind, std::int64_t iteration,
                    std::int64_t microBatch, double ratio) {
    TensorResult t;
    t.id.module = module;
    t.id.kind = kind;
    t.id.iteration = iteration;
    t.id.microBatch = microBatch;
    t.id.index = kind == TensorKind::ParamGrad || kind == TensorKind::MainGrad ? "weight" : "0";
    t.shape = {4, 8};
    t.ratio = ratio;
    t.tolerance.value = 1e-6;
    t.tolerance.source = "empirical";
    t.metrics.relError = ratio * 1e-6;
    t.metrics.elements = 32;
    t.metrics.shards = {{0, 16, ratio * 1e-6}, {1, 16, ratio * 0.5e-6}};
    t.status = ratio > 1.0 ? Status::Divergent : Status::Clean;
    t.placement = "copy boxes over 2 ranks";
    t.histogram.edges = {1e-6, 1e-3, 1.0, 1e3};
    t.histogram.counts = {10, 12, 10};
    return t;
}

// A run whose bug is in layers.0.mlp.fc2's forward output at iteration 1 only; layers.1 inherits.
std::vector<TensorResult> results() {
    std::vector<TensorResult> out;
    for (std::int64_t it = 0; it < 2; ++it) {
        for (std::int64_t mb = 0; mb < 2; ++mb) {
            out.push_back(result("embedding", TensorKind::ForwardOutput, it, mb, 0.01));
            out.push_back(result("layers.0.attn", TensorKind::ForwardOutput, it, mb, 0.2));
            out.push_back(result("layers.0.mlp.fc1", TensorKind::ForwardOutput, it, mb, 0.3));
            out.push_back(
                result("layers.0.mlp.fc2", TensorKind::ForwardOutput, it, mb, it ? 50.0 : 0.4));
            out.push_back(result("layers.0.mlp.fc2", TensorKind::ParamGrad, it, mb, 0.5));
            out.push_back(
                result("layers.1.mlp.fc2", TensorKind::ForwardOutput, it, mb, it ? 20.0 : 0.1));
            out.push_back(result("loss", TensorKind::ForwardOutput, it, mb, it ? 5.0 : 0.1));
        }
        out.push_back(result("layers.0.mlp.fc2", TensorKind::MainGrad, it, -1, 0.7));
    }
    return out;
}

QModelIndex child(const QAbstractItemModel& m, const QModelIndex& parent, const QString& label) {
    for (int r = 0; r < m.rowCount(parent); ++r) {
        const auto i = m.index(r, kNameColumn, parent);
        if (i.data().toString() == label) {
            return i;
        }
    }
    return {};
}

} // namespace

class TestModels : public QObject {
    Q_OBJECT
private slots:
    void treeAppearsFromMetadata() {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setModules(modules());
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.columnCount(), kLayerTreeColumnCount);
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("embedding"));
        QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("layers"));
        QCOMPARE(model.index(2, 0).data().toString(), QStringLiteral("loss"));
        const auto layers = model.index(1, 0);
        QCOMPARE(model.rowCount(layers), 2);
        QCOMPARE(model.index(0, 0, layers).data().toString(), QStringLiteral("layers.0"));
        QVERIFY(!layers.data(IsModuleRole).toBool());
        QCOMPARE(layers.data(ModuleOrderRole).toInt(), 1);
        const auto l0 = model.indexOfModule("layers.0");
        QVERIFY(l0.data(IsModuleRole).toBool());
        const auto mlp = child(model, l0, "mlp");
        QVERIFY(mlp.isValid());
        QCOMPARE(mlp.data(ModuleNameRole).toString(), QStringLiteral("layers.0.mlp"));
        QCOMPARE(model.rowCount(mlp), 2);
        QCOMPARE(model.parent(model.indexOfModule("layers.0.mlp.fc2")), mlp);
        // No statistics yet: empty cells, no colours anywhere.
        const auto fc2 = model.indexOfModule("layers.0.mlp.fc2", kWorstColumn);
        QVERIFY(!fc2.data(RatioRole).isValid());
        QVERIFY(!fc2.data(Qt::BackgroundRole).isValid());
        QCOMPARE(model.headerData(kFirstKindColumn, Qt::Horizontal).toString(),
                 QStringLiteral("fwd out"));
    }

    void streamedResultsFillCells() {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setModules(modules());
        QSignalSpy changed(&model, &LayerTreeModel::resultsChanged);
        for (auto& t : results()) {
            model.addTensorResult(t);
        }
        QVERIFY(changed.count() > 0);
        const int fwdOut = *columnOfKind(TensorKind::ForwardOutput);
        const auto fc2 = model.indexOfModule("layers.0.mlp.fc2", fwdOut);
        QCOMPARE(fc2.data(RatioRole).toDouble(), 50.0);
        QCOMPARE(fc2.data(StatusRole).toInt(), static_cast<int>(Status::Divergent));
        QCOMPARE(fc2.data(Qt::DisplayRole).toString(), QStringLiteral("50"));
        QVERIFY(!fc2.data(AggregateRole).toBool());
        QCOMPARE(fc2.data(ErrorRole).toDouble(), 50e-6);
        QCOMPARE(fc2.data(ToleranceRole).toDouble(), 1e-6);
        // Groups and modules without own tensors of a kind show their worst descendant.
        const auto mlp = model.indexOfModule("layers.0.mlp", fwdOut);
        QCOMPARE(mlp.data(RatioRole).toDouble(), 50.0);
        QVERIFY(mlp.data(AggregateRole).toBool());
        const auto layers = model.index(1, kWorstColumn);
        QCOMPARE(layers.data(RatioRole).toDouble(), 50.0);
        // A module appearing only in results gets a row of its own.
        model.addTensorResult(result("head", TensorKind::ForwardOutput, 0, 0, 0.2));
        QVERIFY(model.indexOfModule("head").isValid());
        QCOMPARE(model.rowCount(), 4);
        // Kinds without a column are kept but do not show.
        model.addTensorResult(result("embedding", TensorKind::OptimizerState, 0, -1, 1e9));
        QCOMPARE(model.indexOfModule("embedding", kWorstColumn).data(RatioRole).toDouble(), 0.01);
    }

    void stepFilterSelectsCells() {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setModules(modules());
        for (auto& t : results()) {
            model.addTensorResult(t);
        }
        const int fwdOut = *columnOfKind(TensorKind::ForwardOutput);
        const int mainGrad = *columnOfKind(TensorKind::MainGrad);
        model.setStepFilter({0, std::nullopt});
        QCOMPARE(model.indexOfModule("layers.0.mlp.fc2", fwdOut).data(RatioRole).toDouble(), 0.4);
        QVERIFY(model.divergentModules().isEmpty());
        QVERIFY(model.firstDivergentModule().isEmpty());
        model.setStepFilter({1, 1});
        QCOMPARE(model.indexOfModule("layers.0.mlp.fc2", fwdOut).data(RatioRole).toDouble(), 50.0);
        // Once-per-iteration tensors show under every micro-batch.
        QCOMPARE(model.indexOfModule("layers.0.mlp.fc2", mainGrad).data(RatioRole).toDouble(), 0.7);
        const auto tensor = model.tensorAt(model.indexOfModule("layers.0.mlp.fc2", fwdOut));
        QVERIFY(tensor);
        QCOMPARE(model.results().tensor(*tensor).id.microBatch, 1);
        QCOMPARE(model.results().iterations(), (std::vector<std::int64_t>{0, 1}));
        QCOMPARE(model.results().microBatches(), (std::vector<std::int64_t>{0, 1}));
        QCOMPARE(model.results().history(model.results().tensor(*tensor).id, true).size(), 4u);
    }

    void divergenceNavigation() {
        LayerTreeModel model;
        model.setModules(modules());
        for (auto& t : results()) {
            model.addTensorResult(t);
        }
        QCOMPARE(model.divergentModules(),
                 (QStringList{"layers.0.mlp.fc2", "layers.1.mlp.fc2", "loss"}));
        // Without the engine's verdicts: the first divergent module in execution order.
        QCOMPARE(model.firstDivergentModule(), QStringLiteral("layers.0.mlp.fc2"));
        QCOMPARE(model.divergentColumn("layers.0.mlp.fc2"),
                 *columnOfKind(TensorKind::ForwardOutput));
        QCOMPARE(model.divergentColumn("embedding"), kWorstColumn);
    }

    void finalResultsKeepRows() {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setModules(modules());
        for (auto& t : results()) {
            model.addTensorResult(t);
        }
        const QPersistentModelIndex fc2 = model.indexOfModule("layers.0.mlp.fc2");
        QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
        auto final = std::make_shared<DiffResult>();
        final->tensors = results();
        for (const auto& m : modules()) {
            ModuleResult r;
            r.name = m.name;
            r.type = m.type;
            r.order = m.order;
            r.origin = m.name == "layers.1.mlp.fc2" ? Origin::Introduced
                       : m.name == "loss"           ? Origin::Inherited
                                                    : Origin::None;
            final->modules.push_back(r);
        }
        final->firstForwardDivergence = "layers.1.mlp.fc2";
        model.setFinalResult(final);
        QCOMPARE(resets.count(), 0);
        QVERIFY(fc2.isValid());
        QVERIFY(model.results().isFinal());
        QCOMPARE(model.firstDivergentModule(), QStringLiteral("layers.1.mlp.fc2"));
        QCOMPARE(model.indexOfModule("layers.1.mlp.fc2").data(OriginRole).toInt(),
                 static_cast<int>(Origin::Introduced));
        QCOMPARE(model.indexOfModule("loss").data(OriginRole).toInt(),
                 static_cast<int>(Origin::Inherited));
        // Streamed results after the final ones are ignored.
        model.addTensorResult(result("embedding", TensorKind::ForwardOutput, 0, 0, 1e6));
        QCOMPARE(model.indexOfModule("embedding", kWorstColumn).data(RatioRole).toDouble(), 0.01);
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void filterProxy() {
        LayerTreeModel model;
        LayerFilterProxy proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester tester(&proxy,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setModules(modules());
        for (auto& t : results()) {
            model.addTensorResult(t);
        }
        QCOMPARE(proxy.rowCount(), 3);
        proxy.setSearchText("FC2");
        // Ancestors of matches stay; unrelated branches go.
        QCOMPARE(proxy.rowCount(), 1);
        QVERIFY(proxy.mapFromSource(model.indexOfModule("layers.1.mlp.fc2")).isValid());
        QVERIFY(!proxy.mapFromSource(model.indexOfModule("layers.0.attn")).isValid());
        proxy.setSearchText({});
        proxy.setDivergentOnly(true);
        QVERIFY(proxy.mapFromSource(model.indexOfModule("loss")).isValid());
        QVERIFY(proxy.mapFromSource(model.indexOfModule("layers.0.mlp.fc2")).isValid());
        QVERIFY(!proxy.mapFromSource(model.indexOfModule("embedding")).isValid());
        QVERIFY(!proxy.mapFromSource(model.indexOfModule("layers.0.mlp.fc1")).isValid());
        proxy.setDivergentOnly(false);
        // Sorting by a ratio column puts the worst first.
        proxy.sort(kWorstColumn, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, 0).data().toString(), QStringLiteral("layers"));
        proxy.sort(kNameColumn, Qt::AscendingOrder);
        QCOMPARE(proxy.index(0, 0).data().toString(), QStringLiteral("embedding"));
    }

    void statsTable() {
        StatsTableModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(model.copyText().isEmpty());
        auto t = result("layers.0.mlp.fc2", TensorKind::ForwardOutput, 1, 0, 50.0);
        t.metrics.candNaN = 3;
        t.findings.push_back(makeError("replica-disagree", "rank 1", "replicas disagree"));
        model.setTensor(t);
        QVERIFY(model.rowCount() >= 15);
        const QString all = model.copyText();
        for (const char* needle :
             {"Ratio\t50", "Tolerance\t1.00e-06 (empirical)", "Shape\t[4, 8]",
              "NaN / Inf cand\t3 / 0", "Placement\tcopy boxes over 2 ranks", "replicas disagree"}) {
            QVERIFY2(all.contains(QLatin1String(needle)), qPrintable(all));
        }
        const QString one = model.copyText({model.index(2, 0), model.index(2, 1)});
        QCOMPARE(one, QStringLiteral("Ratio\t50\n"));
        QVERIFY(!all.contains(QLatin1String("Optimizer conditioning")));
    }

    void statsTableShowsTheElementsDrivingTheRatio() {
        auto t = result("layers.1.mlp.fc2", TensorKind::ParamAfterStep, 0, -1, 0.9);
        t.conditioning.illConditioned = 2;
        t.conditioning.relative = 3e-4;
        t.conditioning.conditionedError = 9e-7;
        t.conditioning.topElements = {{17, 2e-5, 4e-5, 3.9e-5}, {3, 1e-8, 2e-8, 0.0}};
        StatsTableModel model;
        model.setTensor(t);
        const QString all = model.copyText();
        for (const char* needle :
             {"Optimizer conditioning\t2 ill-conditioned elements; terms 3.00e-04 relative",
              "Elements driving the ratio\t[17] 2.00e-05 / 4.00e-05 (conditioning 3.90e-05); "
              "[3] 1.00e-08 / 2.00e-08 (conditioning 0)"}) {
            QVERIFY2(all.contains(QLatin1String(needle)), qPrintable(all));
        }
    }

    void markdownReportOfTheView() {
        LayerTreeModel model;
        model.setModules(modules());
        for (auto& t : results()) {
            model.addTensorResult(t);
        }
        ReportView view;
        view.reference = "/runs/ref";
        view.candidate = "/runs/cand";
        view.selectedTensor = model.tensorAt(
            model.indexOfModule("layers.0.mlp.fc2", *columnOfKind(TensorKind::ForwardOutput)));
        view.problems = {"error: rank 1: rank-00001.h5 is missing"};
        const QString md = markdownReport(model, view);
        for (const char* needle :
             {"# TTrace Explorer report", "`/runs/cand`", "first diverges at `layers.0.mlp.fc2`",
              "| 1 | `layers.0.mlp.fc2` |", "### Selected tensor", "| Ratio | 50 |",
              "rank-00001.h5 is missing"}) {
            QVERIFY2(md.contains(QLatin1String(needle)), qPrintable(md));
        }
    }

    void numberFormats() {
        QCOMPARE(formatRatio(0.0), QStringLiteral("0"));
        QCOMPARE(formatRatio(0.4213), QStringLiteral("0.42"));
        QCOMPARE(formatRatio(27.4), QStringLiteral("27"));
        QCOMPARE(formatRatio(2.49e5), QStringLiteral("2.5e5"));
        QCOMPARE(formatRatio(0.003), QStringLiteral("3.0e-3"));
        QCOMPARE(formatRatio(std::numeric_limits<double>::infinity()), QStringLiteral("inf"));
        QCOMPARE(formatScientific(1.234e-7), QStringLiteral("1.23e-07"));
    }

    void recentBundles() {
        QTemporaryDir dir;
        QSettings settings(dir.filePath("recent.ini"), QSettings::IniFormat);
        RecentBundles recent(&settings);
        QVERIFY(recent.pairs().isEmpty());
        for (int i = 0; i < RecentBundles::kMaxEntries + 3; ++i) {
            recent.add({QStringLiteral("/ref%1").arg(i), QStringLiteral("/cand%1").arg(i)});
        }
        QCOMPARE(recent.pairs().size(), RecentBundles::kMaxEntries);
        QCOMPARE(recent.pairs().front().reference, QStringLiteral("/ref10"));
        recent.add({"/ref5", "/cand5"});
        QCOMPARE(recent.pairs().front(), (BundlePair{"/ref5", "/cand5"}));
        QCOMPARE(recent.pairs().size(), RecentBundles::kMaxEntries);
        QSettings again(dir.filePath("recent.ini"), QSettings::IniFormat);
        QCOMPARE(RecentBundles(&again).pairs().front(), (BundlePair{"/ref5", "/cand5"}));
        recent.clear();
        QVERIFY(recent.pairs().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestModels)
#include "test_models.moc"
