#pragma once
// "Connect to GPU Host": starts a localize agent on a GPU host over the user's own ssh, in four
// steps the user sees: the host and paths (remembered); the command `ttrace serve` would run
// there, which the user confirms before anything runs; the agent's start as progress with
// Cancel (which ends the ssh processes and, with them, everything started on the host); and,
// after the handshake, what the agent says of its code (`code_changes`) and whether it serves
// the bundles shown, which the user confirms. The work is asynchronous (RemoteAgentLauncher).
#include "ttrace/replay/agent_info.h"
#include "ttrace/ui/models/ssh_target.h"

#include <QDialog>

#include <functional>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;
class QTimer;

namespace ttrace::ui {

class AgentSession;
class RemoteAgentLauncher;
class SshTargetForm;

class SshConnectDialog : public QDialog {
    Q_OBJECT
public:
    enum class Page { Host, Plan, Starting, Check };
    Q_ENUM(Page)
    // Why an agent does not serve the bundles shown (empty: it does).
    using BundleCheck = std::function<QString(const replay::AgentInfo&)>;

    SshConnectDialog(const SshTarget& initial, BundleCheck check, QWidget* parent = nullptr);
    ~SshConnectDialog() override; // an agent not taken is stopped

    [[nodiscard]] Page page() const;
    [[nodiscard]] SshTarget target() const;
    // After accept: the launcher holding the agent's ssh processes; the caller owns it.
    [[nodiscard]] RemoteAgentLauncher* takeLauncher();
    [[nodiscard]] RemoteAgentLauncher* launcher() const { return launcher_; }
    [[nodiscard]] const replay::AgentInfo* agentInfo() const;

    [[nodiscard]] SshTargetForm* form() const { return form_; }
    [[nodiscard]] QPushButton* showCommandButton() const { return showCommand_; }
    [[nodiscard]] QPushButton* startButton() const { return start_; }
    [[nodiscard]] QPushButton* useButton() const { return use_; }
    [[nodiscard]] QPushButton* cancelButton() const { return cancel_; }
    [[nodiscard]] QPlainTextEdit* planView() const { return plan_; }
    [[nodiscard]] QLabel* errorLabel() const { return error_; }
    [[nodiscard]] QLabel* progressLabel() const { return progress_; }
    [[nodiscard]] QLabel* codeLabel() const { return code_; }
    [[nodiscard]] QLabel* bundlesLabel() const { return bundles_; }

signals:
    void pageChanged(ttrace::ui::SshConnectDialog::Page page);

private:
    QWidget* hostPage();
    QWidget* planPage();
    QWidget* startingPage();
    QWidget* checkPage();
    void wireLauncher();
    void setPage(Page page);
    void showError(const QString& why);
    void onAgentConnected();
    void onCancel();

    BundleCheck check_;
    RemoteAgentLauncher* launcher_;
    AgentSession* session_; // the handshake shown on the last page
    QStackedWidget* pages_;
    SshTargetForm* form_;
    QPlainTextEdit* plan_;
    QLabel* planHeader_;
    QLabel* error_;
    QLabel* hostStatus_ = nullptr; // "Asking HOST…" while the plan is fetched
    QLabel* progress_;
    QLabel* elapsed_;
    QLabel* agent_;
    QLabel* code_;
    QLabel* bundles_;
    QPushButton* showCommand_;
    QPushButton* back_;
    QPushButton* start_;
    QPushButton* use_;
    QPushButton* cancel_;
    QTimer* tick_;
};

} // namespace ttrace::ui
