// "Connect to GPU Host" against a real OpenSSH server on a loopback port (tests/ui/ssh): the
// explorer runs the real `ssh` with a throwaway config (a Host alias reached through another
// with ProxyJump), the real `ttrace serve` relaunches a real TP2 candidate (torchrun, gloo)
// from copied bundles, and one click Localize names the guilty module through the tunnel. Also:
// an agent serving another capture is refused; Cancel during the start leaves no process.
#include "loopback_sshd.h"
#include "ttrace/ui/agent_status_widget.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/localize_ui.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/agent_session.h"
#include "ttrace/ui/models/code_changes_text.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/localize_badge.h"
#include "ttrace/ui/models/remote_agent_launcher.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/ssh_target.h"
#include "ttrace/ui/ssh_connect_dialog.h"
#include "ttrace/ui/ssh_target_form.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

#include <functional>

using namespace ttrace::ui;

namespace {

constexpr int kStartTimeoutMs = 300000; // a relaunch on a loaded 2-core machine
constexpr int kGoneTimeoutMs = 30000;

QString bundles(const char* name) {
    return qEnvironmentVariable("TTRACE_SSH_BUNDLES") + "/copied/" + name;
}

// Processes of this test's remote side: the relaunch's (its environment names the served copy)
// and every ssh using the test's config.
QStringList leftovers(const QString& sshConfig) {
    QStringList found;
    const QByteArray served = "TTRACE_REPLAY_CANDIDATE=" + bundles("candidate").toUtf8();
    for (const QString& pid : QDir("/proc").entryList(QDir::Dirs)) {
        if (pid.toInt() <= 0 || pid.toLongLong() == QCoreApplication::applicationPid()) {
            continue;
        }
        QFile environ("/proc/" + pid + "/environ");
        QFile cmdline("/proc/" + pid + "/cmdline");
        const QByteArray env = environ.open(QIODevice::ReadOnly) ? environ.readAll() : "";
        QByteArray cmd = cmdline.open(QIODevice::ReadOnly) ? cmdline.readAll() : "";
        if (env.split('\0').contains(served) || cmd.contains(sshConfig.toUtf8()) ||
            (cmd.contains("--stdio") && cmd.contains(bundles("candidate").toUtf8()))) {
            found << pid + ": " + QString::fromUtf8(cmd.replace('\0', ' '));
        }
    }
    return found;
}

// The relaunch's processes (torchrun and its ranks): their environment names the served copy.
int relaunchProcesses() {
    const QByteArray served = "TTRACE_REPLAY_CANDIDATE=" + bundles("candidate").toUtf8();
    int n = 0;
    for (const QString& pid : QDir("/proc").entryList(QDir::Dirs)) {
        QFile environ("/proc/" + pid + "/environ");
        if (pid.toInt() > 0 && environ.open(QIODevice::ReadOnly) &&
            environ.readAll().split('\0').contains(served)) {
            ++n;
        }
    }
    return n;
}

bool listensOnLoopbackOnly(int port) {
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        QFile f(QString::fromLatin1(table));
        if (!f.open(QIODevice::ReadOnly)) {
            continue;
        }
        for (const QByteArray& line : f.readAll().split('\n')) {
            const auto cols = line.simplified().split(' ');
            if (cols.size() < 4 || cols[3] != "0A") { // 0A: LISTEN
                continue;
            }
            const auto local = cols[1].split(':');
            if (local.size() == 2 && local[1].toInt(nullptr, 16) == port &&
                local[0] != "0100007F" && local[0] != "00000000000000000000000001000000") {
                return false;
            }
        }
    }
    return true;
}

bool commandLinesHold(const QString& secret) {
    for (const QString& pid : QDir("/proc").entryList(QDir::Dirs)) {
        QFile cmdline("/proc/" + pid + "/cmdline");
        if (pid.toInt() > 0 && cmdline.open(QIODevice::ReadOnly) &&
            cmdline.readAll().contains(secret.toUtf8())) {
            return true;
        }
    }
    return false;
}

void save(QWidget* widget, const QString& name) {
    const QString dir = qEnvironmentVariable("TTRACE_SCREENSHOTS_DIR");
    if (!dir.isEmpty() && QDir().mkpath(dir)) {
        widget->grab().save(dir + '/' + name);
    }
}

bool load(MainWindow& w, const QString& reference, const QString& candidate) {
    QSignalSpy finished(&w, &MainWindow::loadingFinished);
    w.openBundles(reference, candidate);
    return finished.wait(180000) && finished.front().front().toBool();
}

} // namespace

class TestSshConnect : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_ssh_connect"));
        QSettings().clear();
        QVERIFY2(QFileInfo(bundles("candidate") + "/manifest.json").isFile(),
                 "no bundles (the ui_ssh_bundles fixture makes them)");
        const QString source = qEnvironmentVariable("TTRACE_SOURCE_DIR");
        // The login environment a cluster's module system would give: ttrace's interpreter
        // and the training code on the path.
        sshd_ = std::make_unique<LoopbackSshd>(QStringList{
            "TTRACE_PYTHON=" + qEnvironmentVariable("TTRACE_PYTHON"),
            "PYTHONPATH=" + source + "/python:" + source, QStringLiteral("OMP_NUM_THREADS=1")});
        QVERIFY2(sshd_->error().isEmpty(), qPrintable(sshd_->error()));
    }

    void argumentsKeepTheUsersOptionsFirstAndQuotePaths() {
        SshTarget t;
        t.destination = QStringLiteral("me@gpu");
        t.reference = QStringLiteral("/runs/it's ref");
        t.candidate = QStringLiteral("~/runs/cand");
        t.sshOptions = QStringLiteral("-J login -o \"ServerAliveInterval 10\"");
        QVERIFY(t.problem().isEmpty());
        const QStringList plan = t.planArguments();
        QCOMPARE(plan.mid(0, 4), (QStringList{"-J", "login", "-o", "ServerAliveInterval 10"}));
        QCOMPARE(plan.at(plan.size() - 2), QStringLiteral("me@gpu"));
        QCOMPARE(plan.last(), QStringLiteral("ttrace serve --reference '/runs/it'\\''s ref' "
                                             "--candidate ~/'runs/cand' '--print-plan'"));
        const QStringList tunnel = t.tunnelArguments(40001, "127.0.0.1", 41733);
        QVERIFY(tunnel.contains("127.0.0.1:40001:127.0.0.1:41733"));
        QVERIFY(t.tunnelArguments(40001, "::1", 5).contains("127.0.0.1:40001:[::1]:5"));
        t.destination = QStringLiteral("-oProxyCommand=x");
        QVERIFY(!t.problem().isEmpty()); // never an option in the destination's place
    }

    void codeChangesAreWordedAsTheCommandLine() {
        ttrace::replay::AgentInfo live;
        QVERIFY(codeChangesLine(live).isEmpty()); // a live job runs the captured code
        ttrace::replay::AgentInfo same;
        same.relaunched = true;
        QCOMPARE(codeChangesLine(same),
                 QStringLiteral("relaunched from the bundles; the same code as captured"));
        ttrace::replay::AgentInfo changed = same;
        changed.codeChanges = {"examples.gpt.layers.norm: source changed"};
        QVERIFY(codeChanged(changed));
        QVERIFY(codeChangesLine(changed).contains("CHANGED since capture"));
        QVERIFY(
            codeChangesDetail(changed).endsWith("\n  examples.gpt.layers.norm: source changed"));
        // A relaunch smaller than the job: its layout next to the captured one, in the words
        // of `ttrace localize`'s layout line.
        ttrace::replay::AgentInfo smaller = same;
        smaller.capturedLayout = {4, {{"tp", 2}, {"dp", 2}}};
        smaller.relaunchedLayout = {2, {{"tp", 2}, {"dp", 1}}};
        smaller.ranksPerRank = 2;
        QCOMPARE(codeChangesDetail(smaller),
                 QStringLiteral("relaunched from the bundles; the same code as captured\n"
                                "layout: relaunched TP2, 2 ranks, of the captured TP2 x DP2, 4 "
                                "ranks: each rank replays 2 captured ranks in turn; replays that "
                                "need the data-parallel group are refused"));
    }

    void connectsOverSshAndLocalizesWithOneClick() {
        auto w = std::make_unique<MainWindow>();
        w->show();
        QVERIFY(load(*w, bundles("reference"), bundles("candidate")));
        QVERIFY(!w->localizeAction()->isEnabled());
        RemoteAgentLauncher* launcher = nullptr;
        QString failure;
        QTimer::singleShot(0, this, [&] { failure = driveDialog(true, &launcher); });
        auto* action = w->findChild<QAction*>(QStringLiteral("connectGpuHostAction"));
        QVERIFY(action);
        action->trigger(); // modal until driveDialog ends it
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        auto* session = w->localizeUi()->session();
        QVERIFY(QTest::qWaitFor([&] { return session->state() == AgentSession::State::Connected; },
                                30000));
        const QString status = w->localizeUi()->statusWidget()->text();
        QVERIFY2(status.contains("2 ranks") && status.contains("same code as captured"),
                 qPrintable(status));
        const AgentTarget target = session->target();
        QCOMPARE(target.host, QStringLiteral("127.0.0.1"));
        QVERIFY(target.tokenFile.isEmpty() && target.token.size() == 64);
        QVERIFY2(!commandLinesHold(target.token), "the token is on a command line");
        QVERIFY(listensOnLoopbackOnly(target.port));
        QVERIFY(!rememberedAgent(bundles("candidate")).isComplete()); // a tunnel is not kept
        QCOMPARE(rememberedSshTarget({}, bundles("candidate")).destination, QString("gpu-node"));

        // One click: the first divergence is selected; Localize names the guilty module.
        QCOMPARE(w->treePane()->currentModule(), QStringLiteral("layers.1.mlp.linear_fc1"));
        QVERIFY(w->localizeAction()->isEnabled());
        QSignalSpy done(w->localizeUi(), &LocalizeUi::localizeFinished);
        w->localizeAction()->trigger();
        QVERIFY(done.wait(kStartTimeoutMs));
        const auto badge = static_cast<LocalizeBadge>(
            w->model()->indexOfModule("layers.1.mlp.linear_fc1").data(LocalizeBadgeRole).toInt());
        QCOMPARE(localizeBadgeText(badge), QStringLiteral("introduced here"));
        w->resize(1600, 1000);
        save(w.get(), QStringLiteral("ssh-connected-after-localize.png"));

        // Another capture shown: Localize is refused with the reason, the agent still there.
        const QString demo = qEnvironmentVariable("TTRACE_DEMO_DIR");
        QVERIFY(load(*w, demo + "/reference", demo + "/candidate"));
        QCOMPARE(session->state(), AgentSession::State::Connected);
        QVERIFY(!w->localizeAction()->isEnabled());
        QVERIFY(!w->localizeUi()->localizeAllAction()->isEnabled());
        QVERIFY2(w->localizeAction()->toolTip().contains("the agent serves another candidate"),
                 qPrintable(w->localizeAction()->toolTip()));
        QVERIFY(!w->localizeUi()->localizeAll());
        QVERIFY2(w->headlineBar()->conclusion().startsWith("Cannot localize: the agent serves"),
                 qPrintable(w->headlineBar()->conclusion()));
        // The same capture at another path (the job's own folder, not the copy) is accepted:
        // bundles are identified by their capture, not their path.
        const QString job = qEnvironmentVariable("TTRACE_SSH_BUNDLES") + "/job/candidate";
        QVERIFY(load(*w, bundles("reference"), job));
        QVERIFY(w->localizeUi()->localizeAllAction()->isEnabled());

        // Closing the window ends the agent on the host and every ssh.
        const QString config = sshd_->clientConfig();
        w.reset();
        QVERIFY2(QTest::qWaitFor([&] { return leftovers(config).isEmpty(); }, kGoneTimeoutMs),
                 qPrintable(leftovers(config).join('\n')));
    }

    void cancelDuringTheStartLeavesNoProcess() {
        MainWindow w;
        w.show();
        QVERIFY(load(w, bundles("reference"), bundles("candidate")));
        QString failure;
        QElapsedTimer stopped;
        QTimer::singleShot(0, this, [&] {
            auto* dialog = qobject_cast<SshConnectDialog*>(QApplication::activeModalWidget());
            failure = dialog ? fillAndShowPlan(dialog) : QStringLiteral("no dialog");
            if (!failure.isEmpty()) {
                dialog ? dialog->reject() : void();
                return;
            }
            dialog->startButton()->click();
            // Cancel once the relaunch runs on the host: torchrun and its two ranks.
            if (!QTest::qWaitFor([&] { return relaunchProcesses() >= 3; }, kStartTimeoutMs)) {
                failure =
                    QStringLiteral("the relaunch never started: ") + dialog->errorLabel()->text();
            }
            save(dialog, QStringLiteral("ssh-dialog-starting.png"));
            stopped.start();
            dialog->cancelButton()->click();
        });
        w.findChild<QAction*>(QStringLiteral("connectGpuHostAction"))->trigger();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        QCOMPARE(w.localizeUi()->session()->state(), AgentSession::State::Disconnected);
        const QString config = sshd_->clientConfig();
        QVERIFY2(QTest::qWaitFor([&] { return leftovers(config).isEmpty(); }, kGoneTimeoutMs),
                 qPrintable(leftovers(config).join('\n')));
        qInfo("cancel: no process left %.1f s after Cancel",
              static_cast<double>(stopped.elapsed()) / 1000.0);
    }

    void cleanupTestCase() {
        sshd_.reset();
        QSettings().clear();
    }

private:
    // Fills the form, shows the command; empty when the plan page shows it.
    QString fillAndShowPlan(SshConnectDialog* dialog) {
        SshTargetForm* form = dialog->form();
        // Prefilled with the paths opened here.
        if (form->candidateEdit()->text() != bundles("candidate")) {
            return "candidate not prefilled: " + form->candidateEdit()->text();
        }
        form->destinationEdit()->setText(QStringLiteral("gpu-node"));
        form->ttraceEdit()->setText(qEnvironmentVariable("TTRACE_CLI"));
        form->sshOptionsEdit()->setText("-F " + sshd_->clientConfig());
        save(dialog, QStringLiteral("ssh-dialog-host.png"));
        dialog->showCommandButton()->click();
        if (!QTest::qWaitFor([&] { return dialog->page() == SshConnectDialog::Page::Plan; },
                             120000)) {
            return "no plan: " + dialog->errorLabel()->text();
        }
        const QString plan = dialog->planView()->toPlainText();
        if (!plan.contains("--nproc-per-node=2 -m examples.gpt.train") ||
            !plan.contains("TTRACE_REPLAY=1")) {
            return "unexpected plan: " + plan;
        }
        return {};
    }

    QString driveDialog(bool use, RemoteAgentLauncher** launcher) {
        auto* dialog = qobject_cast<SshConnectDialog*>(QApplication::activeModalWidget());
        if (!dialog) {
            return QStringLiteral("no dialog");
        }
        if (QString f = fillAndShowPlan(dialog); !f.isEmpty()) {
            dialog->reject();
            return f;
        }
        save(dialog, QStringLiteral("ssh-dialog-plan.png"));
        dialog->startButton()->click();
        if (!QTest::qWaitFor([&] { return dialog->page() == SshConnectDialog::Page::Check; },
                             kStartTimeoutMs)) {
            const QString why = "not started: " + dialog->errorLabel()->text();
            dialog->reject();
            return why;
        }
        qInfo("ssh: Start Agent to handshake done %.1f s", dialog->launcher()->secondsSinceStart());
        const QString code = dialog->codeLabel()->text();
        const QString served = dialog->bundlesLabel()->text();
        save(dialog, QStringLiteral("ssh-dialog-code-check.png"));
        if (!code.contains("the same code as captured") || !served.contains("serves the bundles")) {
            dialog->reject();
            return "check page: " + code + " / " + served;
        }
        *launcher = dialog->launcher();
        use ? dialog->useButton()->click() : dialog->reject();
        return {};
    }

    std::unique_ptr<LoopbackSshd> sshd_;
};

QTEST_MAIN(TestSshConnect)
#include "test_ssh_connect.moc"
