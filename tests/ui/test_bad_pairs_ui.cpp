// Bad input is never a confident story: a swapped pair, a candidate with a truncated rank file
// and a folder that is not a bundle, opened in the window and given to `ttrace diff`. The
// window's verdict pill and headline carry the very lines the CLI prints for the same pair;
// a refused pair shows no analysis, offers the swap and cannot be localized; a module whose
// inputs could not be compared is never said to introduce the divergence; an invalid cell names
// the rank file behind it.
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/tensor_columns.h"
#include "ttrace/ui/problems_banner.h"
#include "ttrace/ui/run_summary_bar.h"

#include <QAction>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include <filesystem>

namespace {

struct CliRun {
    int exitCode = -1;
    QString out, err;
};

CliRun runDiff(const QString& reference, const QString& candidate) {
    QProcess p;
    p.start(qEnvironmentVariable("TTRACE_CLI"),
            {QStringLiteral("diff"), QStringLiteral("--no-cache"), reference, candidate});
    CliRun run;
    if (!p.waitForFinished(120000)) {
        return run;
    }
    run.exitCode = p.exitCode();
    run.out = QString::fromUtf8(p.readAllStandardOutput());
    run.err = QString::fromUtf8(p.readAllStandardError());
    return run;
}

QStringList lines(const QString& text) {
    return text.split('\n', Qt::SkipEmptyParts);
}

bool openAndWait(ttrace::ui::MainWindow& window, const QString& ref, const QString& cand) {
    QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
    window.openBundles(ref, cand);
    return finished.wait(120000);
}

} // namespace

class TestBadPairsUi : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_bad_pairs"));
        QVERIFY(QFileInfo(qEnvironmentVariable("TTRACE_CLI")).isExecutable());
        demo_ = qEnvironmentVariable("TTRACE_DEMO_DIR");
        QVERIFY(QFileInfo(demo_ + "/candidate/manifest.json").isFile());
    }

    void swappedPairIsRefusedAsTheCliRefusesIt() {
        const QString ref = demo_ + "/candidate"; // the candidate given first
        const QString cand = demo_ + "/reference";
        const CliRun cli = runDiff(ref, cand);
        QCOMPARE(cli.exitCode, 2);

        ttrace::ui::MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, ref, cand));
        // The headline is the CLI's error line, the pill its verdict line: the same words.
        const QString headline = window.headlineBar()->text();
        QVERIFY2(headline.contains("wrong order"), qPrintable(headline));
        QVERIFY2(lines(cli.err).contains(headline), qPrintable(cli.err + "\n---\n" + headline));
        const QString pill = window.summaryBar()->verdictText();
        QVERIFY2(lines(cli.out).contains(pill), qPrintable(cli.out + "\n---\n" + pill));
        QVERIFY(pill.startsWith("INVALID: not compared"));
        // No analysis of the wrong question: nothing compared, nothing to select or localize.
        QCOMPARE(window.model()->results().size(), std::size_t{0});
        QVERIFY(!window.headlineBar()->headline().divergent);
        QVERIFY(!window.localizeAction()->isEnabled());
        QVERIFY2(window.localizeAction()->toolTip().contains("not compared"),
                 qPrintable(window.localizeAction()->toolTip()));
        // The fix is one click away, and it works.
        const auto* fix = window.problemsBanner()->fixButton();
        QVERIFY(fix->isVisible());
        QCOMPARE(fix->defaultAction(), window.swapAction());
        QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
        window.swapAction()->trigger();
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.front().front().toBool(), true);
        QVERIFY(window.model()->results().size() > 0);
        QVERIFY(window.headlineBar()->headline().divergent);
        QVERIFY(!fix->isVisible());
    }

    void truncatedRankFileMakesTheVerdictIncomplete() {
        namespace fs = std::filesystem;
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path cand = fs::path(tmp.path().toStdString()) / "candidate";
        fs::copy(fs::path(demo_.toStdString()) / "candidate", cand, fs::copy_options::recursive);
        // A copy that stopped part way: the cluster-copy accident.
        fs::resize_file(cand / "rank-00002.h5", fs::file_size(cand / "rank-00002.h5") / 3);
        const QString ref = demo_ + "/reference";
        const QString candDir = QString::fromStdString(cand.string());
        const CliRun cli = runDiff(ref, candDir);
        QCOMPARE(cli.exitCode, 2);

        ttrace::ui::MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, ref, candDir));
        const QString pill = window.summaryBar()->verdictText();
        QVERIFY2(pill.startsWith("INVALID: ") && pill.contains("invalid"), qPrintable(pill));
        QVERIFY2(lines(cli.out).contains(pill), qPrintable(cli.out + "\n---\n" + pill));
        // The headline says the verdict is incomplete and why, naming the file, as the CLI does.
        const QString caveat = window.headlineBar()->caveat();
        QVERIFY2(caveat.startsWith("Verdict incomplete: ") && caveat.contains("rank-00002.h5") &&
                     caveat.contains("truncated"),
                 qPrintable(caveat));
        QVERIFY2(lines(cli.out).contains(caveat), qPrintable(cli.out + "\n---\n" + caveat));

        // No module whose inputs could not be compared is said to introduce the divergence;
        // the CLI names the same modules (none such) after "introduced in".
        const auto* result = window.model()->results().final();
        QVERIFY(result);
        for (const auto& m : result->modules) {
            if (m.origin != ttrace::Origin::Introduced) {
                continue;
            }
            for (const auto i : m.tensors) {
                QVERIFY2(result->tensors[i].status != ttrace::Status::Invalid,
                         qPrintable(QString::fromStdString(m.name)));
            }
        }
        const auto* fc2 = result->module("layers.0.mlp.fc2");
        QVERIFY(fc2);
        QCOMPARE(fc2->origin, ttrace::Origin::Undetermined);
        QVERIFY2(!cli.out.contains("introduced in     layers.0.mlp.fc2"), qPrintable(cli.out));

        // The invalid cell names its cause: the hole, the ranks present and the rank file.
        const int column = *ttrace::ui::columnOfKind(ttrace::TensorKind::ForwardOutput);
        QVERIFY(window.treePane()->selectModule("layers.0.mlp.fc1", column));
        const auto tensor = window.drillDownPane()->currentTensor();
        QVERIFY(tensor);
        QCOMPARE(window.model()->results().tensor(*tensor).status, ttrace::Status::Invalid);
        const QString why = window.drillDownPane()->diagnosisLabel()->text();
        QVERIFY2(why.contains("ranks present: 0, 1, 3") && why.contains("rank-00002.h5") &&
                     why.contains("rank 2"),
                 qPrintable(why));
        QVERIFY2(!why.contains("reference shape"), qPrintable(why));
    }

    void wrongFolderIsNotDescribedWithTheOtherSide() {
        QTemporaryDir notABundle;
        QVERIFY(notABundle.isValid());
        QFile stray(notABundle.filePath("notes.txt"));
        QVERIFY(stray.open(QIODevice::WriteOnly));
        stray.write("not a trace bundle\n");
        stray.close();
        const QString ref = QFileInfo(notABundle.path()).absoluteFilePath();
        const QString cand = QFileInfo(demo_ + "/candidate").absoluteFilePath();
        const CliRun cli = runDiff(ref, cand);
        QCOMPARE(cli.exitCode, 2);

        ttrace::ui::MainWindow window;
        window.show();
        QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
        window.openBundles(ref, cand);
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.front().front().toBool(), false);
        const QString headline = window.headlineBar()->text();
        QVERIFY2(headline.startsWith("error: reference " + ref), qPrintable(headline));
        QVERIFY2(lines(cli.err).contains(headline), qPrintable(cli.err + "\n---\n" + headline));
        const QString pill = window.summaryBar()->verdictText();
        QVERIFY2(lines(cli.out).contains(pill), qPrintable(cli.out + "\n---\n" + pill));
        // The reference line says it could not be opened; the candidate's facts stay its own.
        const auto labels = window.summaryBar()->findChildren<QLabel*>();
        QString header;
        for (const auto* l : labels) {
            header += l->text() + '\n';
        }
        QVERIFY2(header.contains("not opened"), qPrintable(header));
        QCOMPARE(header.count("4 ranks"), 1);
        QVERIFY(!window.localizeAction()->isEnabled());
    }

private:
    QString demo_;
};

QTEST_MAIN(TestBadPairsUi)
#include "test_bad_pairs_ui.moc"
