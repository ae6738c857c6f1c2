#pragma once
// "Connect to GPU Host…": the action, the dialog, and the agent it started, held while the
// explorer uses it. The agent (its ssh processes) is stopped when another agent is connected,
// the session is dropped, or the window closes.
#include <QObject>

class QAction;
class QWidget;

namespace ttrace::ui {

class LocalizeUi;
class RemoteAgentLauncher;

class RemoteConnectUi : public QObject {
    Q_OBJECT
public:
    RemoteConnectUi(LocalizeUi* localize, QWidget* window);
    ~RemoteConnectUi() override;

    [[nodiscard]] QAction* action() const { return action_; }
    // The agent started over ssh that the explorer is connected to (null when none).
    [[nodiscard]] RemoteAgentLauncher* launcher() const { return launcher_; }
    // Opens the dialog; true when the user took an agent.
    bool chooseHost();

private:
    void adopt(RemoteAgentLauncher* launcher);
    void release();

    LocalizeUi* localize_;
    QWidget* window_;
    QAction* action_;
    RemoteAgentLauncher* launcher_ = nullptr;
};

} // namespace ttrace::ui
