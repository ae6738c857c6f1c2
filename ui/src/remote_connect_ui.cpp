#include "ttrace/ui/remote_connect_ui.h"

#include "ttrace/ui/localize_ui.h"
#include "ttrace/ui/models/agent_session.h"
#include "ttrace/ui/models/remote_agent_launcher.h"
#include "ttrace/ui/ssh_connect_dialog.h"

#include <QAction>
#include <QMainWindow>
#include <QStatusBar>
#include <QStyle>
#include <QWidget>

namespace ttrace::ui {

RemoteConnectUi::RemoteConnectUi(LocalizeUi* localize, QWidget* window)
    : QObject(window)
    , localize_(localize)
    , window_(window) {
    action_ = new QAction(window->style()->standardIcon(QStyle::SP_ComputerIcon),
                          tr("Connect to &GPU Host…"), this);
    action_->setObjectName(QStringLiteral("connectGpuHostAction"));
    action_->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_K);
    action_->setIconText(tr("GPU Host"));
    action_->setToolTip(tr("Start a localize agent from the bundles on a GPU host, over your ssh "
                           "(Ctrl+Shift+K)"));
    connect(action_, &QAction::triggered, this, [this] { chooseHost(); });
    // Another agent connected, or the session dropped: the one started here is not needed.
    connect(localize_->session(), &AgentSession::stateChanged, this, [this] {
        if (launcher_ && !(localize_->session()->target() == launcher_->agentTarget())) {
            release();
        }
    });
}

RemoteConnectUi::~RemoteConnectUi() {
    release();
}

bool RemoteConnectUi::chooseHost() {
    const SshTarget initial =
        rememberedSshTarget(localize_->referencePath(), localize_->candidatePath());
    SshConnectDialog dialog(
        initial, [this](const replay::AgentInfo& info) { return localize_->agentMismatch(info); },
        window_);
    if (dialog.exec() != QDialog::Accepted) {
        return false;
    }
    rememberSshTarget(dialog.target(), localize_->candidatePath());
    adopt(dialog.takeLauncher());
    return true;
}

void RemoteConnectUi::adopt(RemoteAgentLauncher* launcher) {
    release();
    launcher->setParent(this);
    launcher_ = launcher;
    connect(launcher_, &RemoteAgentLauncher::ended, this, [this](const QString& why) {
        if (auto* main = qobject_cast<QMainWindow*>(window_)) {
            main->statusBar()->showMessage(why);
        }
        release();
        localize_->session()->disconnectAgent();
    });
    localize_->connectTo(launcher_->agentTarget(), /*remember=*/false);
}

void RemoteConnectUi::release() {
    if (launcher_) {
        RemoteAgentLauncher* old = launcher_;
        launcher_ = nullptr;
        old->stop();
        old->deleteLater();
    }
}

} // namespace ttrace::ui
