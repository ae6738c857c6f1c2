// The explorer opens a comparison without its bundles: the JSON that `ttrace diff --json` (and,
// where MPI was found, `mpirun -n 2 ttrace-mpi diff --json`) wrote for a copy of the demo pair,
// opened after the copy has been moved away, shows the same tree, verdicts, headline,
// statistics and Markdown as opening the bundles; element-level drill-down says why it is
// unavailable; broken reports are refused by name; the headless export works from a report.
#include "ttrace/report/report_open.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/element_view.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/element_inspector.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/stats_table_model.h"
#include "ttrace/ui/problems_banner.h"
#include "ttrace/ui/run_summary_bar.h"
#include "ttrace/ui/stats_table.h"

#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QMimeData>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using ttrace::ui::MainWindow;
namespace fs = std::filesystem;

namespace {

// Every cell of the layer tree: text, status, ratio and tensor, depth first.
void dumpRows(const QAbstractItemModel* m, const QModelIndex& parent, QStringList& out) {
    using namespace ttrace::ui;
    for (int r = 0; r < m->rowCount(parent); ++r) {
        for (int c = 0; c < m->columnCount(parent); ++c) {
            const auto i = m->index(r, c, parent);
            out << QStringLiteral("%1|%2|%3|%4|%5")
                       .arg(i.data(Qt::DisplayRole).toString(), i.data(ModuleNameRole).toString())
                       .arg(i.data(StatusRole).toInt())
                       .arg(i.data(RatioRole).toDouble(), 0, 'g', 17)
                       .arg(i.data(TensorIndexRole).toLongLong());
        }
        dumpRows(m, m->index(r, 0, parent), out);
    }
}

QStringList treeOf(const MainWindow& w) {
    QStringList out;
    dumpRows(w.model(), {}, out);
    return out;
}

QStringList statsOf(const MainWindow& w) {
    QStringList out;
    const auto* m = w.drillDownPane()->statsTable()->statsModel();
    for (int r = 0; r < m->rowCount(); ++r) {
        for (int c = 0; c < m->columnCount(); ++c) {
            out << m->index(r, c).data().toString();
        }
    }
    return out;
}

// Runs a program to its end; its exit code (-1 when it did not start or finish).
int run(const QString& program, const QStringList& args, QByteArray* err = nullptr) {
    QProcess p;
    p.start(program, args);
    if (!p.waitForFinished(240000)) {
        return -1;
    }
    if (err) {
        *err = p.readAllStandardError();
    }
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

bool openAndWait(MainWindow& w, const std::function<void()>& open, bool& ok) {
    QSignalSpy finished(&w, &MainWindow::storyReady);
    open();
    if (!finished.wait(120000)) {
        return false;
    }
    ok = finished.front().front().toBool();
    return true;
}

} // namespace

class TestReportOpenUi : public QObject {
    Q_OBJECT
private:
    QTemporaryDir tmp_;
    QString ref_, cand_, moved_;
    QStringList tree_, stats_;
    QString headline_, verdict_, markdown_;
    std::size_t firstTensor_ = 0;

    QString path(const QString& name) const { return tmp_.filePath(name); }

    // The report window matches what the bundles showed, and its drill-down says why the
    // elements cannot be read.
    void checkReportWindow(const QString& report) {
        MainWindow w;
        w.show();
        bool ok = false;
        QVERIFY(openAndWait(
            w, [&] { w.openReport(report); }, ok));
        QVERIFY2(ok, qPrintable(w.problemsBanner()->text()));
        QCOMPARE(w.reportFile(), QFileInfo(report).absoluteFilePath());
        QCOMPARE(treeOf(w), tree_);
        QCOMPARE(w.headlineBar()->text(), headline_);
        QCOMPARE(w.summaryBar()->verdictText(), verdict_);
        QVERIFY(w.selectTensor(firstTensor_));
        QCOMPARE(statsOf(w), stats_);
        QCOMPARE(w.markdownReport(), markdown_);
        w.elementsDock()->show();
        const QString why = w.elementView()->statusLabel()->text();
        QVERIFY2(why.contains(QString::fromUtf8(ttrace::kReportOnlyReason.data())),
                 qPrintable(why));
        QVERIFY(!w.elementView()->inspector()->isRunning());
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        const fs::path demo = qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
        QVERIFY(fs::exists(demo / "candidate" / "manifest.json"));
        const fs::path root = tmp_.path().toStdString();
        fs::copy(demo / "reference", root / "ref", fs::copy_options::recursive);
        fs::copy(demo / "candidate", root / "cand", fs::copy_options::recursive);
        ref_ = path("ref");
        cand_ = path("cand");
        // `ttrace diff` exits 1 on this pair: the demo has an injected bug.
        QCOMPARE(run(qEnvironmentVariable("TTRACE_CLI"),
                     {"diff", "--quiet", "--no-cache", "--json", path("diff.json"), ref_, cand_}),
                 1);
        const QString mpiexec = qEnvironmentVariable("TTRACE_MPIEXEC");
        if (!mpiexec.isEmpty()) {
            QCOMPARE(run(mpiexec, {"--oversubscribe", "--allow-run-as-root", "-n", "2",
                                   qEnvironmentVariable("TTRACE_MPI"), "diff", "--quiet",
                                   "--no-cache", "--json", path("mpi.json"), ref_, cand_}),
                     1);
        }
        // What the bundles show.
        MainWindow w;
        w.show();
        bool ok = false;
        QVERIFY(openAndWait(
            w, [&] { w.openBundles(ref_, cand_); }, ok));
        QVERIFY(ok);
        tree_ = treeOf(w);
        QVERIFY(tree_.size() > 20);
        headline_ = w.headlineBar()->text();
        QVERIFY(!headline_.isEmpty());
        verdict_ = w.summaryBar()->verdictText();
        QVERIFY(verdict_.contains("DIVERGENT"));
        const auto* result = w.model()->results().final();
        QVERIFY(result && result->firstDivergence);
        firstTensor_ = result->firstDivergence->tensor;
        QVERIFY(w.selectTensor(firstTensor_));
        stats_ = statsOf(w);
        QVERIFY(!stats_.isEmpty());
        markdown_ = w.markdownReport();
        // The bundles are gone from here on.
        moved_ = path("moved-away");
        QVERIFY(QDir().rename(tmp_.path() + "/ref", moved_ + "-ref"));
        QVERIFY(QDir().rename(tmp_.path() + "/cand", moved_ + "-cand"));
    }

    void reportOfTtraceDiffShowsWhatTheBundlesShowed() { checkReportWindow(path("diff.json")); }

    void reportOfTtraceMpiShowsWhatTheBundlesShowed() {
        if (qEnvironmentVariableIsEmpty("TTRACE_MPIEXEC")) {
            QSKIP("built without MPI");
        }
        checkReportWindow(path("mpi.json"));
    }

    void droppedReportOpens() {
        MainWindow w;
        w.show();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(path("diff.json"))});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton,
                              Qt::NoModifier);
        QCoreApplication::sendEvent(&w, &enter);
        QVERIFY(enter.isAccepted());
        bool ok = false;
        QVERIFY(openAndWait(
            w,
            [&] {
                QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton,
                                Qt::NoModifier);
                QCoreApplication::sendEvent(&w, &drop);
            },
            ok));
        QVERIFY(ok);
        QCOMPARE(treeOf(w), tree_);
    }

    void brokenReportIsRefusedByName() {
        std::ifstream in(path("diff.json").toStdString());
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        std::ofstream(path("cut.json").toStdString()) << text.substr(0, text.size() / 2);
        MainWindow w;
        w.show();
        bool ok = true;
        QVERIFY(openAndWait(
            w, [&] { w.openReport(path("cut.json")); }, ok));
        QVERIFY(!ok);
        QVERIFY2(w.problemsBanner()->text().contains("cut.json"),
                 qPrintable(w.problemsBanner()->text()));
        QCOMPARE(w.model()->results().size(), std::size_t{0});
        // Still usable: a good report opens next.
        QVERIFY(openAndWait(
            w, [&] { w.openReport(path("diff.json")); }, ok));
        QVERIFY(ok);
        QCOMPARE(treeOf(w), tree_);
    }

    void mismatchedCacheEntryIsRefusedByName() {
        std::ofstream(path("entry.json").toStdString()) << "\"key\"\n{\"schema\": \"ttrace-diff\"}";
        MainWindow w;
        bool ok = true;
        QVERIFY(openAndWait(
            w, [&] { w.openReport(path("diff.json"), path("entry.json")); }, ok));
        QVERIFY(!ok);
        QVERIFY2(w.problemsBanner()->text().contains("entry.json"),
                 qPrintable(w.problemsBanner()->text()));
    }

    void headlessExportFromAReport() {
        const QString explorer = qEnvironmentVariable("TTRACE_EXPLORER");
        // The exit status of `ttrace diff` for the pair: 1, divergent.
        QCOMPARE(run(explorer, {"--report", path("diff.json"), "--screenshot", path("shot.png"),
                                "--markdown", path("report.md")}),
                 1);
        QImage shot(path("shot.png"));
        QVERIFY(!shot.isNull() && shot.width() > 800);
        QFile md(path("report.md"));
        QVERIFY(md.open(QIODevice::ReadOnly));
        QVERIFY(md.readAll().contains("DIVERGENT"));
        QByteArray err;
        QCOMPARE(
            run(explorer, {"--report", path("cut.json"), "--screenshot", path("no.png")}, &err), 2);
        QVERIFY2(err.contains("cut.json"), err.constData());
        // As for a broken bundle, the picture shows the refusal (for a bug report).
        QVERIFY(!QImage(path("no.png")).isNull());
        QCOMPARE(run(explorer, {"--report", path("diff.json"), ref_, cand_}), 2); // usage
    }
};

QTEST_MAIN(TestReportOpenUi)
#include "test_report_open_ui.moc"
