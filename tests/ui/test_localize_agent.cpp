// The explorer against real localize agents (tests/ui/agent/agent_fixture.py starts them: the
// example GPT as 4-rank TP2 x DP2 gloo jobs serving on loopback). Drives the connect dialog,
// one-click Localize, Localize All with its progress and Cancel, the badges, the headline on
// the demo (iteration 0, gradient reduction, the sequence-parallel norms), the warnings dock,
// and the command line's --agent/--localize/--screenshot.
#include "ttrace/replay/localize_text.h"
#include "ttrace/ui/agent_status_widget.h"
#include "ttrace/ui/connect_dialog.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/error_histogram_plot.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/localize_ui.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/agent_session.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/warnings_model.h"
#include "ttrace/ui/problems_banner.h"
#include "ttrace/ui/replay_comparison_plot.h"
#include "ttrace/ui/warnings_dock.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QtTest>

using namespace ttrace::ui;
using ttrace::replay::LocalizeResult;

namespace {

constexpr int kLocalizeTimeoutMs = 240000;

struct Agent {
    QString bundle;
    AgentTarget target;
};

Agent agent(const QString& name) {
    const QString dir = qEnvironmentVariable("TTRACE_AGENTS_DIR") + '/' + name;
    Agent a;
    a.bundle = dir + "/bundle";
    QFile endpoint(dir + "/endpoint");
    if (endpoint.open(QIODevice::ReadOnly)) {
        AgentTarget::parseHostPort(QString::fromUtf8(endpoint.readAll()).trimmed(), a.target);
    }
    a.target.tokenFile = dir + "/token";
    return a;
}

QString reference() {
    return qEnvironmentVariable("TTRACE_AGENTS_DIR") + "/reference";
}

LocalizeBadge badge(const MainWindow& w, const char* module) {
    return static_cast<LocalizeBadge>(
        w.model()->indexOfModule(module).data(LocalizeBadgeRole).toInt());
}

QString badgeText(const MainWindow& w, const char* module) {
    return localizeBadgeText(badge(w, module));
}

bool load(MainWindow& w, const QString& candidate) {
    QSignalSpy finished(&w, &MainWindow::loadingFinished);
    w.openBundles(reference(), candidate);
    return finished.wait(180000) && finished.front().front().toBool();
}

bool connectTo(MainWindow& w, const AgentTarget& target) {
    auto* session = w.localizeUi()->session();
    QSignalSpy state(session, &AgentSession::stateChanged);
    w.localizeUi()->connectTo(target);
    return QTest::qWaitFor([&] { return session->state() != AgentSession::State::Connecting; },
                           30000) &&
           session->state() == AgentSession::State::Connected;
}

// Runs `start` and waits for the localize run's end while counting GUI timer ticks: the event
// loop must keep turning (the replays run on a worker thread).
LocalizeResult runAndWait(MainWindow& w, const std::function<bool()>& start, int* ticks) {
    QSignalSpy done(w.localizeUi(), &LocalizeUi::localizeFinished);
    QTimer timer;
    int n = 0;
    QObject::connect(&timer, &QTimer::timeout, [&n] { ++n; });
    timer.start(20);
    if (!start()) {
        return {};
    }
    if (!done.wait(kLocalizeTimeoutMs)) {
        return {};
    }
    if (ticks) {
        *ticks = n;
    }
    return done.front().front().value<LocalizeResult>();
}

} // namespace

class TestLocalizeAgent : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_localize"));
        QSettings().clear();
        for (const char* name : {"probe", "demo"}) {
            const Agent a = agent(name);
            QVERIFY2(a.target.isComplete() && QFile::exists(a.target.tokenFile),
                     qPrintable(QStringLiteral("no serving agent %1 (ui_agents_start)").arg(name)));
        }
    }

    void connectDialogConnects() {
        MainWindow w;
        w.show();
        QVERIFY(load(w, agent("probe").bundle));
        QVERIFY(!w.localizeAction()->isEnabled()); // no agent yet
        const AgentTarget target = agent("probe").target;
        bool filled = false;
        QTimer::singleShot(0, this, [&] {
            auto* dialog = qobject_cast<ConnectDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog);
            // What the agent logs, pasted as it is.
            dialog->addressEdit()->setText("tcp://" + target.hostPort());
            dialog->tokenEdit()->setText(target.tokenFile);
            QVERIFY(dialog->buttons()->button(QDialogButtonBox::Ok)->isEnabled());
            filled = true;
            dialog->buttons()->button(QDialogButtonBox::Ok)->click();
        });
        w.localizeUi()->connectAction()->trigger(); // modal until the timer clicks OK
        QVERIFY(filled);
        auto* session = w.localizeUi()->session();
        QVERIFY(QTest::qWaitFor([&] { return session->state() == AgentSession::State::Connected; },
                                30000));
        const QString status = w.localizeUi()->statusWidget()->text();
        QVERIFY2(status.contains(target.hostPort()) && status.contains("4 ranks") &&
                     status.contains("TP2") && status.contains("ttrace "),
                 qPrintable(status));
        QVERIFY(w.localizeAction()->isEnabled());
        QVERIFY(w.localizeUi()->localizeAllAction()->isEnabled());
        // Remembered for this bundle: the next dialog starts from it.
        QCOMPARE(rememberedAgent(agent("probe").bundle), target);

        // A bad token file fails with its name, and reconnecting recovers.
        AgentTarget bad = target;
        bad.tokenFile = QDir::temp().filePath("ttrace-no-such-token");
        w.localizeUi()->connectTo(bad);
        QCOMPARE(session->state(), AgentSession::State::Failed);
        QVERIFY2(w.localizeUi()->statusWidget()->text().contains("ttrace-no-such-token"),
                 qPrintable(w.localizeUi()->statusWidget()->text()));
        QVERIFY(!w.localizeAction()->isEnabled());
        QVERIFY(connectTo(w, target));
    }

    void oneClickLocalizeBadgesTheModule() {
        MainWindow w;
        w.show();
        QAbstractItemModelTester tester(w.model(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(load(w, agent("probe").bundle));
        QVERIFY(connectTo(w, agent("probe").target));
        // The probe's module is the first divergence in time: the headline and the selection.
        QCOMPARE(w.treePane()->currentModule(), QStringLiteral("layers.1.mlp.linear_fc1"));
        QVERIFY2(w.headlineBar()->text().contains("iteration 0") &&
                     w.headlineBar()->text().contains("forward"),
                 qPrintable(w.headlineBar()->text()));
        int ticks = 0;
        const auto r = runAndWait(
            w,
            [&] {
                w.localizeAction()->trigger();
                return true;
            },
            &ticks);
        QVERIFY2(r.problems.empty(),
                 r.problems.empty() ? "" : r.problems.front().toString().c_str());
        QCOMPARE(r.verdicts.size(), std::size_t{1});
        // A replay run on the GUI thread would finish inside trigger(), before the event
        // loop could fire the 20 ms timer once; a replay with real agents takes longer than
        // one tick, so the timer firing at all shows the GUI thread stayed free (counting
        // more ticks than that made the check depend on how fast the agents answered).
        QVERIFY2(ticks >= 1, "the GUI thread was blocked during the replay");
        QCOMPARE(badgeText(w, "layers.1.mlp.linear_fc1"), QStringLiteral("introduced here"));
        // The drill-down plots the replayed error beside the captured one.
        QVERIFY(w.drillDownPane()->replayPlot()->isVisible());
        QVERIFY(w.drillDownPane()->replayPlot()->barCount() > 0);
        // ... and the replayed forward output's element errors beside the captured ones: the
        // bug persists given the reference's inputs, so some element stays beyond the line.
        const auto* replayed = w.drillDownPane()->replayHistogramPlot();
        QVERIFY(replayed->isVisible());
        QVERIFY2(replayed->title().startsWith("Replayed fwd output["),
                 qPrintable(replayed->title()));
        QVERIFY(replayed->plottedElements() > 0);
        QVERIFY(replayed->elementsBeyondTolerance() > 0);
        QVERIFY(w.drillDownPane()->histogramPlot()->plottedElements() > 0);

        // Its parent contains the bug; a module after it only inherits it.
        QVERIFY(w.treePane()->selectModule("layers.1.mlp", 2));
        runAndWait(
            w, [&] { return w.localizeUi()->localizeSelected(); }, nullptr);
        QCOMPARE(badgeText(w, "layers.1.mlp"), QStringLiteral("introduced below"));
        runAndWait(
            w, [&] { return w.localizeUi()->localizeModule("final_layernorm"); }, nullptr);
        QCOMPARE(badgeText(w, "final_layernorm"), QStringLiteral("inherited"));
        QCOMPARE(badgeText(w, "layers.1.mlp.linear_fc1"), QStringLiteral("introduced here"));
    }

    void localizeAllWalksFromTheFirstDivergence() {
        MainWindow w;
        w.show();
        QVERIFY(load(w, agent("probe").bundle));
        QVERIFY(connectTo(w, agent("probe").target));
        QSignalSpy verdicts(w.model(), &QAbstractItemModel::dataChanged);
        bool progressShown = false;
        QTimer watch;
        QObject::connect(&watch, &QTimer::timeout, [&] {
            progressShown = progressShown || w.localizeUi()->progressBar()->isVisible();
        });
        watch.start(10);
        const auto r = runAndWait(
            w,
            [&] {
                w.localizeUi()->localizeAllAction()->trigger();
                return true;
            },
            nullptr);
        QVERIFY(progressShown);
        QVERIFY(!w.localizeUi()->progressBar()->isVisible());
        QVERIFY2(r.problems.empty(),
                 r.problems.empty() ? "" : r.problems.front().toString().c_str());
        QCOMPARE(r.guilty, std::vector<std::string>{"layers.1.mlp.linear_fc1"});
        QVERIFY(r.verdicts.size() >= 4);
        QCOMPARE(badgeText(w, "layers.1.mlp.linear_fc1"), QStringLiteral("introduced here"));
        QCOMPARE(badgeText(w, "layers.1.mlp"), QStringLiteral("introduced below"));
        QCOMPARE(badgeText(w, "layers.1"), QStringLiteral("introduced below"));
        QCOMPARE(badgeText(w, "loss"), QStringLiteral("inherited"));
        QVERIFY(verdicts.size() >= static_cast<qsizetype>(r.verdicts.size()));
        QVERIFY2(w.headlineBar()->conclusion().contains("layers.1.mlp.linear_fc1"),
                 qPrintable(w.headlineBar()->conclusion()));
    }

    void localizeAllCanBeCancelled() {
        MainWindow w;
        w.show();
        QVERIFY(load(w, agent("probe").bundle));
        QVERIFY(connectTo(w, agent("probe").target));
        QSignalSpy done(w.localizeUi(), &LocalizeUi::localizeFinished);
        QVERIFY(w.localizeUi()->localizeAll());
        QVERIFY(w.localizeUi()->cancelAction()->isEnabled());
        QVERIFY(!w.localizeUi()->localizeAllAction()->isEnabled()); // one run at a time
        QTest::mouseClick(w.findChild<QPushButton*>("cancelLocalizeButton"), Qt::LeftButton);
        QVERIFY(done.wait(60000));
        const auto r = done.front().front().value<LocalizeResult>();
        QVERIFY(r.cancelled);
        QVERIFY(r.problems.empty());
        QVERIFY(w.headlineBar()->conclusion().contains("cancelled"));
        QVERIFY(badge(w, "layers.1") != LocalizeBadge::Replaying);
        // The agent and the window are still usable.
        const auto again = runAndWait(
            w, [&] { return w.localizeUi()->localizeModule("layers.1.mlp.linear_fc1"); }, nullptr);
        QVERIFY(again.problems.empty() && !again.cancelled);
        QCOMPARE(badgeText(w, "layers.1.mlp.linear_fc1"), QStringLiteral("introduced here"));
    }

    void demoTellsTheStory() {
        MainWindow w;
        w.resize(1600, 1000);
        w.show();
        QVERIFY(load(w, agent("demo").bundle));
        const QSize laptop(1280, 720);
        const auto fitsLaptop = [&] {
            const QSize hint = w.minimumSizeHint();
            return hint.width() <= laptop.width() && hint.height() <= laptop.height();
        };
        QVERIFY(fitsLaptop());
        const QString headline = w.headlineBar()->text();
        QVERIFY2(headline.contains("iteration 0") && headline.contains("gradient reduction") &&
                     headline.contains("layernorm") && headline.contains("main grad"),
                 qPrintable(headline));
        const QString first = w.headlineBar()->headline().module;
        QVERIFY2(first.endsWith("layernorm"), qPrintable(first));
        QCOMPARE(w.treePane()->currentModule(), first);
        QCOMPARE(w.model()->stepFilter().iteration, std::optional<std::int64_t>(0));
        // Warnings are grouped in the dock, not raw lines in a banner.
        QVERIFY(!w.problemsBanner()->isVisible());
        QVERIFY(w.warningsModel()->rowCount() > 0);
        QVERIFY(w.warningsModel()->rowCount() < w.warningsModel()->itemCount());

        QVERIFY(connectTo(w, agent("demo").target));
        // One click on the first divergence: the step is right given the reference's main
        // grads, so the reduction is what is wrong.
        auto r = runAndWait(
            w,
            [&] {
                w.localizeAction()->trigger();
                return true;
            },
            nullptr);
        QVERIFY2(r.problems.empty(),
                 r.problems.empty() ? "" : r.problems.front().toString().c_str());
        QCOMPARE(badgeText(w, qPrintable(first)),
                 QStringLiteral("introduced in gradient reduction"));
        // The summary says so in `ttrace localize`'s words, never an innocent's "inherited".
        const QString single = w.headlineBar()->conclusion();
        QVERIFY2(single.startsWith("INTRODUCED: introduced in gradient reduction: parameters of " +
                                   first),
                 qPrintable(single));
        QVERIFY(single.startsWith(QString::fromStdString(ttrace::replay::localizeVerdictLine(r))));
        r = runAndWait(
            w, [&] { return w.localizeUi()->localizeAll(); }, nullptr);
        QVERIFY2(r.problems.empty(),
                 r.problems.empty() ? "" : r.problems.front().toString().c_str());
        QVERIFY(r.guiltyPhase.has_value());
        QVERIFY(!r.guiltyParameters.empty());
        for (const auto& m : r.guiltyParameters) {
            QVERIFY2(QString::fromStdString(m).endsWith("layernorm"), m.c_str());
            QCOMPARE(badgeText(w, m.c_str()), QStringLiteral("introduced in gradient reduction"));
        }
        QVERIFY(w.headlineBar()->conclusion().startsWith(
            QString::fromStdString(ttrace::replay::localizeVerdictLine(r))));
        // Localize All kept the single Localize's verdict of the norm (iteration 0).
        QVERIFY(w.model()->localize().verdict(first.toStdString(), 0) != nullptr);

        const QImage shot = w.screenshot();
        QVERIFY(!shot.isNull());
        const QString out = qEnvironmentVariable("TTRACE_AGENTS_DIR") + "/demo-explorer.png";
        QVERIFY(shot.save(out));
        QVERIFY(w.headlineBar()->isVisible());
        QVERIFY(w.headlineBar()->geometry().bottom() < w.height() / 4);
        // The selected norm's drill-down shows its replay beside the capture: the step's
        // param_after_step, replayed with the reference's main grads, as a histogram over all
        // of its elements.
        QVERIFY(w.drillDownPane()->replayPlot()->isVisible());
        QVERIFY(w.drillDownPane()->replayPlot()->barCount() > 0);
        const auto* replayed = w.drillDownPane()->replayHistogramPlot();
        QVERIFY(replayed->isVisible());
        QVERIFY2(replayed->title().contains("param after step"), qPrintable(replayed->title()));
        QVERIFY(replayed->plottedElements() > 0);
        // The dock stays small: the tree and drill-down keep the window.
        QVERIFY(w.warningsDock()->height() < w.height() / 5);
        // A replay shown does not grow the window: it still fits a laptop screen, where every
        // toolbar action and the status bar stay on screen (screenshots for review).
        QCOMPARE(w.size(), QSize(1600, 1000));
        QVERIFY(fitsLaptop());
        const QString shots = qEnvironmentVariable("TTRACE_SCREENSHOTS_DIR");
        QDir().mkpath(shots);
        QVERIFY(w.screenshot().save(QDir(shots).filePath("explorer-replay-1600x1000.png")));
        w.resize(laptop);
        QVERIFY(QTest::qWaitFor([&] { return w.size() == laptop; }, 2000));
        const auto* toolbar = w.findChild<QToolBar*>(QStringLiteral("mainToolBar"));
        QVERIFY(toolbar);
        for (QAction* a : toolbar->actions()) {
            const QWidget* button = a->isSeparator() ? nullptr : toolbar->widgetForAction(a);
            QVERIFY2(a->isSeparator() || (button && button->isVisible()), qPrintable(a->text()));
        }
        QVERIFY(w.statusBar()->isVisible());
        QVERIFY(w.statusBar()->geometry().bottom() < w.height());
        QVERIFY(w.screenshot().save(QDir(shots).filePath("explorer-replay-1280x720.png")));
    }

    void commandLineLocalizesBeforeTheScreenshot() {
        const QString explorer = qEnvironmentVariable("TTRACE_EXPLORER");
        QVERIFY(QFile::exists(explorer));
        const Agent demo = agent("demo");
        const QString png = qEnvironmentVariable("TTRACE_AGENTS_DIR") + "/cli-screenshot.png";
        const QString md = qEnvironmentVariable("TTRACE_AGENTS_DIR") + "/cli-report.md";
        QFile::remove(png);
        QProcess p;
        p.start(explorer, {"--screenshot", png, "--markdown", md, "--agent", demo.target.hostPort(),
                           "--token-file", demo.target.tokenFile, "--localize", "all", reference(),
                           demo.bundle});
        QVERIFY(p.waitForFinished(kLocalizeTimeoutMs));
        // The demo diverges: the same exit code as `ttrace diff`.
        QVERIFY2(p.exitCode() == 1, p.readAllStandardError().constData());
        QVERIFY(QImage(png).width() > 1000);
        QFile report(md);
        QVERIFY(report.open(QIODevice::ReadOnly));
        QVERIFY(report.readAll().contains("replica-disagree"));

        // A wrong token file: a clear failure, no hang.
        p.start(explorer, {"--screenshot", png, "--agent", demo.target.hostPort(), "--token-file",
                           "/nonexistent/token", "--localize", "all", reference(), demo.bundle});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("/nonexistent/token"));

        // A module the bundles do not have: said, not replayed.
        p.start(explorer,
                {"--screenshot", png, "--agent", demo.target.hostPort(), "--token-file",
                 demo.target.tokenFile, "--localize", "no.such.module", reference(), demo.bundle});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("no module 'no.such.module'"));
    }

    void cleanupTestCase() { QSettings().clear(); }
};

QTEST_MAIN(TestLocalizeAgent)
#include "test_localize_agent.moc"
