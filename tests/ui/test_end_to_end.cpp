// End to end on the demo bundles with an injected bug (layers.1.mlp.fc2 drops a partial-sum term
// on rank 1): load through the worker thread, check that the first divergent module is selected
// and its drill-down is filled, navigate, and take a screenshot whose tree shows the heat map.
#include "ttrace/compare/report_json.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/error_histogram_plot.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/export_controller.h"
#include "ttrace/ui/models/layer_filter_proxy.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/stats_table_model.h"
#include "ttrace/ui/problems_banner.h"
#include "ttrace/ui/progress_cancel_widget.h"
#include "ttrace/ui/ratio_history_plot.h"
#include "ttrace/ui/run_summary_bar.h"
#include "ttrace/ui/shard_error_plot.h"
#include "ttrace/ui/stats_table.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QLineEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

using namespace ttrace::ui;

namespace {

// A saturated red hue, as the colour scale paints divergent cells (amber is not red).
bool reddish(QRgb rgb) {
    const QColor c(rgb);
    const int h = c.hsvHue();
    return (h >= 345 || (h >= 0 && h <= 12)) && c.hsvSaturation() > 100 && c.value() > 90;
}

int countReddish(const QImage& image, const QRect& area) {
    int n = 0;
    const QRect r = area.intersected(image.rect());
    for (int y = r.top(); y <= r.bottom(); ++y) {
        for (int x = r.left(); x <= r.right(); ++x) {
            n += reddish(image.pixel(x, y)) ? 1 : 0;
        }
    }
    return n;
}

} // namespace

class TestEndToEnd : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_end_to_end"));
        demo_ = qEnvironmentVariable("TTRACE_DEMO_DIR");
        QVERIFY2(QFile::exists(demo_ + "/candidate/manifest.json"), qPrintable(demo_));
    }

    void demoBundlesShowTheBug() {
        MainWindow window;
        window.resize(1600, 1000);
        window.show();
        // Testers watch the live model and proxy while results stream in from the worker.
        QAbstractItemModelTester modelTester(
            window.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester proxyTester(
            window.treePane()->proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy finished(&window, &MainWindow::loadingFinished);
        window.openBundles(demo_ + "/reference", demo_ + "/candidate");
        QVERIFY(finished.wait(120000));
        QVERIFY2(finished.front().front().toBool(), qPrintable(window.problemsBanner()->text()));

        // The first divergence is selected: the injected bug.
        const QString first = window.model()->firstDivergentModule();
        QCOMPARE(first, QStringLiteral("layers.1.mlp.fc2"));
        QCOMPARE(window.treePane()->currentModule(), first);
        QVERIFY(window.summaryBar()->verdictText().contains("DIVERGENT"));

        // Its drill-down is filled.
        auto* drill = window.drillDownPane();
        QVERIFY(drill->currentTensor());
        QVERIFY(drill->histogramPlot()->plottedElements() > 0);
        QVERIFY(drill->histogramPlot()->elementsBeyondTolerance() > 0);
        QCOMPARE(drill->shardPlot()->barCount(), 4);
        QVERIFY(drill->historyPlot()->pointCount() >= 2);
        QVERIFY(drill->statsTable()->statsModel()->rowCount() > 10);
        drill->statsTable()->copyAll();
        QVERIFY(QGuiApplication::clipboard()->text().contains("Ratio\t"));

        // The screenshot shows the heat map: many red pixels inside the tree.
        const QString png = QDir::current().filePath("explorer-demo.png");
        QString error;
        QVERIFY2(window.exportPng(png, nullptr, &error), qPrintable(error));
        const QImage shot(png);
        QVERIFY(!shot.isNull());
        auto* viewport = window.treePane()->treeView()->viewport();
        const qreal dpr = shot.devicePixelRatio();
        const QRect tree(viewport->mapTo(&window, QPoint(0, 0)) * dpr, viewport->size() * dpr);
        const int red = countReddish(shot, tree);
        QVERIFY2(red > 5000, qPrintable(QStringLiteral("only %1 red pixels in the tree").arg(red)));

        // Navigation walks the divergent modules in execution order and back.
        const QStringList divergent = window.model()->divergentModules();
        QVERIFY(divergent.size() > 1);
        const auto at = divergent.indexOf(first);
        window.treePane()->nextDivergentAction()->trigger();
        QCOMPARE(window.treePane()->currentModule(), divergent[(at + 1) % divergent.size()]);
        window.treePane()->previousDivergentAction()->trigger();
        QCOMPARE(window.treePane()->currentModule(), first);
        window.treePane()->firstDivergenceAction()->trigger();
        QCOMPARE(window.treePane()->currentModule(), first);

        // Choosing an iteration narrows the tree.
        auto* iteration = window.treePane()->findChild<QComboBox*>("iterationSelector");
        QVERIFY(iteration && iteration->count() == 3);
        iteration->setCurrentIndex(1);
        QCOMPARE(window.model()->stepFilter().iteration, std::optional<std::int64_t>(0));

        // Search keeps the match and its ancestors.
        window.treePane()->searchBox()->setText("fc2");
        QVERIFY(window.treePane()
                    ->proxy()
                    ->mapFromSource(window.model()->indexOfModule(first))
                    .isValid());
        QVERIFY(!window.treePane()
                     ->proxy()
                     ->mapFromSource(window.model()->indexOfModule("layers.0.norm"))
                     .isValid());

        const QString md = window.markdownReport();
        QVERIFY2(md.contains("`layers.1.mlp.fc2`"), qPrintable(md));
        QVERIFY(md.contains("## Current view: iteration 0"));
    }

    // The window's exports run on the export runner, shown by the status bar's export progress:
    // the PNG grabbed here, encoded and written there; the reports rendered there from the
    // same core functions as `ttrace diff`; a file that cannot be written named in the status.
    void exportsRunAsAJob() {
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        QSignalSpy finished(&window, &MainWindow::loadingFinished);
        window.openBundles(demo_ + "/reference", demo_ + "/candidate");
        QVERIFY(finished.wait(120000));
        QTemporaryDir dir;
        const QString png = dir.filePath("window.png");
        const QString md = dir.filePath("report.md");
        const QString json = dir.filePath("report.json");
        std::optional<ExportOutcome> outcome;
        connect(window.exports(), &ExportController::finished, this,
                [&outcome](const ExportOutcome& o) { outcome = o; });
        std::vector<ExportFile> files;
        files.push_back(window.pngExportOf(png));
        files.push_back(window.markdownExport(md));
        files.push_back(window.jsonExport(json));
        window.startExport(std::move(files), false);
        QVERIFY(window.exportProgress()->isVisible());
        QCOMPARE(window.exportProgress()->maximum(), 6);
        QVERIFY(window.exportProgress()->text().contains("window.png"));
        QTRY_VERIFY_WITH_TIMEOUT(outcome.has_value(), 30000);
        QVERIFY(outcome->ok());
        QCOMPARE(outcome->saved, QStringList({png, md, json}));
        QVERIFY(!window.exportProgress()->isVisible());
        QCOMPARE(window.exportProgress()->value(), 6);
        QVERIFY(!QImage(png).isNull());
        QFile mdFile(md);
        QVERIFY(mdFile.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(mdFile.readAll()), window.markdownReport());
        QFile jsonFile(json);
        QVERIFY(jsonFile.open(QIODevice::ReadOnly));
        QCOMPARE(jsonFile.readAll().toStdString(),
                 ttrace::diffResultToJson(*window.model()->results().final()));
        QVERIFY(window.statusBar()->currentMessage().contains("report.json"));

        // A folder that is a file: the export says which file it could not write.
        QFile blocker(dir.filePath("file"));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        const QString bad = dir.filePath("file/report.md");
        outcome.reset();
        window.startExport({window.markdownExport(bad)}, false);
        QTRY_VERIFY_WITH_TIMEOUT(outcome.has_value(), 30000);
        QCOMPARE(outcome->errors.size(), 1);
        QVERIFY2(outcome->errors.front().startsWith(bad + ": "),
                 qPrintable(outcome->errors.front()));
        QVERIFY2(window.statusBar()->currentMessage().startsWith(bad + ": "),
                 qPrintable(window.statusBar()->currentMessage()));
    }

    void cancelLeavesTheWindowUsable() {
        MainWindow window;
        window.show();
        QSignalSpy finished(&window, &MainWindow::loadingFinished);
        window.openBundles(demo_ + "/reference", demo_ + "/candidate");
        window.cancelAction()->trigger();
        QVERIFY(finished.wait(120000));
        QVERIFY(!window.isLoading());
        window.openBundles(demo_ + "/reference", demo_ + "/candidate");
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.last().front().toBool(), true);
    }

private:
    QString demo_;
};

QTEST_MAIN(TestEndToEnd)
#include "test_end_to_end.moc"
