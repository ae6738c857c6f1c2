#include "ttrace/ui/ssh_connect_dialog.h"

#include "ttrace/ui/models/agent_session.h"
#include "ttrace/ui/models/code_changes_text.h"
#include "ttrace/ui/models/remote_agent_launcher.h"
#include "ttrace/ui/ssh_target_form.h"

#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace ttrace::ui {
namespace {

QLabel* wrapped(QWidget* parent, const char* name) {
    auto* label = new QLabel(parent);
    label->setObjectName(QString::fromLatin1(name));
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

QString colored(const QString& text, const char* color) {
    return QStringLiteral("<span style=\"color:%1\">%2</span>")
        .arg(QString::fromLatin1(color), text.toHtmlEscaped().replace('\n', "<br>"));
}

} // namespace

SshConnectDialog::SshConnectDialog(const SshTarget& initial, BundleCheck check, QWidget* parent)
    : QDialog(parent)
    , check_(std::move(check))
    , launcher_(new RemoteAgentLauncher(this))
    , session_(new AgentSession(this))
    , pages_(new QStackedWidget(this))
    , form_(new SshTargetForm(initial, this))
    , plan_(new QPlainTextEdit(this))
    , planHeader_(wrapped(this, "sshPlanHeader"))
    , error_(wrapped(this, "sshError"))
    , progress_(wrapped(this, "sshProgress"))
    , elapsed_(new QLabel(this))
    , agent_(wrapped(this, "sshAgent"))
    , code_(wrapped(this, "sshCode"))
    , bundles_(wrapped(this, "sshBundles"))
    , showCommand_(new QPushButton(tr("&Show Command"), this))
    , back_(new QPushButton(tr("&Back"), this))
    , start_(new QPushButton(tr("&Start Agent"), this))
    , use_(new QPushButton(tr("&Use This Agent"), this))
    , cancel_(new QPushButton(tr("Cancel"), this))
    , tick_(new QTimer(this)) {
    setWindowTitle(tr("Connect to GPU Host"));
    setObjectName(QStringLiteral("sshConnectDialog"));
    pages_->addWidget(hostPage());
    pages_->addWidget(planPage());
    pages_->addWidget(startingPage());
    pages_->addWidget(checkPage());
    error_->setStyleSheet(QStringLiteral("color: #b91c1c;"));
    error_->hide();
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(back_);
    buttons->addStretch(1);
    for (QPushButton* b : {showCommand_, start_, use_, cancel_}) {
        buttons->addWidget(b);
    }
    showCommand_->setObjectName(QStringLiteral("sshShowCommand"));
    start_->setObjectName(QStringLiteral("sshStart"));
    use_->setObjectName(QStringLiteral("sshUse"));
    cancel_->setObjectName(QStringLiteral("sshCancel"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(pages_, 1);
    layout->addWidget(error_);
    layout->addLayout(buttons);
    connect(showCommand_, &QPushButton::clicked, this, [this] {
        error_->hide();
        showCommand_->setEnabled(false);
        form_->setEnabled(false);
        hostStatus_->setText(
            tr("Asking %1 what ttrace serve would run…").arg(target().destination));
        launcher_->fetchPlan(target());
    });
    connect(back_, &QPushButton::clicked, this, [this] {
        launcher_->stop();
        session_->disconnectAgent();
        setPage(Page::Host);
    });
    connect(start_, &QPushButton::clicked, this, [this] {
        setPage(Page::Starting);
        launcher_->start();
    });
    connect(use_, &QPushButton::clicked, this, &QDialog::accept);
    connect(cancel_, &QPushButton::clicked, this, &SshConnectDialog::onCancel);
    connect(form_, &SshTargetForm::changed, this,
            [this] { showCommand_->setEnabled(target().problem().isEmpty()); });
    connect(tick_, &QTimer::timeout, this, [this] {
        elapsed_->setText(tr("%1 s").arg(launcher_->secondsSinceStart(), 0, 'f', 0));
    });
    tick_->setInterval(1000);
    wireLauncher();
    setPage(Page::Host);
    resize(720, 460);
}

SshConnectDialog::~SshConnectDialog() = default; // the launcher, a child, stops its processes

QWidget* SshConnectDialog::hostPage() {
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    auto* intro = wrapped(page, "sshIntro");
    intro->setText(tr("Start a localize agent on a GPU host that has the training code: "
                      "<b>ttrace serve</b> relaunches the candidate's script from the bundles "
                      "there, over your own ssh. Nothing runs before you confirm the command. "
                      "ssh must log in without a prompt (a key, an agent, or a connection your "
                      "ControlMaster keeps open)."));
    intro->setTextFormat(Qt::RichText);
    layout->addWidget(intro);
    layout->addWidget(form_);
    hostStatus_ = wrapped(page, "sshHostStatus");
    layout->addWidget(hostStatus_);
    layout->addStretch(1);
    return page;
}

QWidget* SshConnectDialog::planPage() {
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    plan_->setObjectName(QStringLiteral("sshPlan"));
    plan_->setReadOnly(true);
    plan_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    plan_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(planHeader_);
    layout->addWidget(plan_, 1);
    return page;
}

QWidget* SshConnectDialog::startingPage() {
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    auto* bar = new QProgressBar(page);
    bar->setRange(0, 0); // the relaunch says how far it is only in its log
    auto* row = new QHBoxLayout;
    row->addWidget(bar, 1);
    row->addWidget(elapsed_);
    layout->addWidget(wrapped(page, "sshStartingTitle"));
    static_cast<QLabel*>(layout->itemAt(0)->widget())
        ->setText(tr("Starting the agent (Cancel stops everything it started on the host)"));
    layout->addLayout(row);
    layout->addWidget(progress_);
    layout->addStretch(1);
    return page;
}

QWidget* SshConnectDialog::checkPage() {
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    code_->setTextFormat(Qt::RichText);
    bundles_->setTextFormat(Qt::RichText);
    layout->addWidget(agent_);
    layout->addWidget(code_);
    layout->addWidget(bundles_);
    layout->addStretch(1);
    return page;
}

void SshConnectDialog::wireLauncher() {
    connect(launcher_, &RemoteAgentLauncher::planReady, this, [this](const RelaunchPlan& plan) {
        planHeader_->setText(tr("On %1, ttrace serve will relaunch the candidate's script in "
                                "replay mode with %2 ranks (no training step runs). Nothing "
                                "runs until you start it:")
                                 .arg(target().destination)
                                 .arg(plan.worldSize));
        plan_->setPlainText(plan.command);
        setPage(Page::Plan);
    });
    connect(launcher_, &RemoteAgentLauncher::progress, progress_, &QLabel::setText);
    connect(launcher_, &RemoteAgentLauncher::failed, this, &SshConnectDialog::showError);
    connect(launcher_, &RemoteAgentLauncher::ended, this, &SshConnectDialog::showError);
    connect(launcher_, &RemoteAgentLauncher::ready, this, [this](const AgentTarget& target) {
        progress_->setText(tr("Agent serving; handshake through the tunnel…"));
        session_->connectTo(target);
    });
    connect(session_, &AgentSession::stateChanged, this, [this](AgentSession::State state) {
        if (state == AgentSession::State::Connected) {
            onAgentConnected();
        } else if (state == AgentSession::State::Failed) {
            showError(session_->error());
            launcher_->stop();
        }
    });
}

void SshConnectDialog::onAgentConnected() {
    const auto& info = *session_->info();
    agent_->setText(
        tr("Connected to %1 on %2 (%3), through 127.0.0.1:%4.")
            .arg(QString::fromStdString(info.agent), target().destination, agentLayout(info))
            .arg(launcher_->agentTarget().port));
    const QString code = codeChangesDetail(info);
    code_->setText(code.isEmpty() ? tr("A live job's agent: it runs the captured code.")
                                  : colored(code, codeChanged(info) ? "#b45309" : "#15803d"));
    const QString mismatch = check_ ? check_(info) : QString();
    bundles_->setText(
        mismatch.isEmpty()
            ? colored(tr("It serves the bundles shown (the same captures)."), "#15803d")
            : colored(tr("Localize stays disabled: %1").arg(mismatch), "#b91c1c"));
    setPage(Page::Check);
}

void SshConnectDialog::showError(const QString& why) {
    error_->setText(why);
    error_->show();
    tick_->stop();
    form_->setEnabled(true);
    showCommand_->setEnabled(target().problem().isEmpty());
    if (page() != Page::Host) {
        setPage(Page::Host);
    }
}

void SshConnectDialog::onCancel() {
    // Ends ssh, and with it the serve on the host and every rank it started.
    launcher_->stop();
    session_->disconnectAgent();
    reject();
}

void SshConnectDialog::setPage(Page p) {
    pages_->setCurrentIndex(static_cast<int>(p));
    showCommand_->setVisible(p == Page::Host);
    showCommand_->setEnabled(p == Page::Host && target().problem().isEmpty());
    form_->setEnabled(p == Page::Host);
    back_->setVisible(p == Page::Plan || p == Page::Check);
    start_->setVisible(p == Page::Plan);
    use_->setVisible(p == Page::Check);
    if (p == Page::Plan) {
        start_->setDefault(true);
    } else if (p == Page::Check) {
        use_->setDefault(true);
    } else if (p == Page::Host) {
        showCommand_->setDefault(true);
        progress_->clear();
        hostStatus_->clear();
    }
    p == Page::Starting ? tick_->start() : tick_->stop();
    emit pageChanged(p);
}

SshConnectDialog::Page SshConnectDialog::page() const {
    return static_cast<Page>(pages_->currentIndex());
}

SshTarget SshConnectDialog::target() const {
    return form_->target();
}

const replay::AgentInfo* SshConnectDialog::agentInfo() const {
    return session_->info();
}

RemoteAgentLauncher* SshConnectDialog::takeLauncher() {
    disconnect(launcher_, nullptr, this, nullptr);
    session_->disconnectAgent();
    RemoteAgentLauncher* taken = launcher_;
    taken->setParent(nullptr);
    launcher_ = new RemoteAgentLauncher(this);
    return taken;
}

} // namespace ttrace::ui
