#pragma once
// Starts a localize agent on a GPU host over the user's own ssh: `ttrace serve --print-plan`
// first (the command is shown and confirmed), then `ttrace serve --stdio --plan-digest D`,
// which runs exactly that command, relaunches the candidate there and sends its endpoint and
// token back over the ssh channel (never a command line, never a file anyone else can read);
// then an `ssh -L` tunnel from a free port on 127.0.0.1 here to the agent's loopback port
// there. Every step is an asynchronous QProcess: nothing blocks the GUI thread.
//
// stop() (Cancel, disconnect, window closed) ends both ssh processes; the agent's serve sees
// its input close and stops the relaunch with every rank.
#include "ttrace/ui/models/agent_target.h"
#include "ttrace/ui/models/relaunch_plan.h"
#include "ttrace/ui/models/ssh_target.h"

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <optional>

class QProcess;
class QTimer;

namespace ttrace::ui {

class RemoteAgentLauncher : public QObject {
    Q_OBJECT
public:
    enum class Stage { Idle, Planning, Planned, Starting, Tunneling, Ready, Failed, Stopped };
    Q_ENUM(Stage)

    explicit RemoteAgentLauncher(QObject* parent = nullptr);
    ~RemoteAgentLauncher() override; // ends the ssh processes

    // Asks the host what `ttrace serve` would run; planReady or failed follows.
    void fetchPlan(const SshTarget& target);
    // Runs the plan shown (after the user confirmed it); progress, then ready or failed.
    void start();
    // Ends the ssh processes (and with them the agent). Safe in any stage.
    void stop();

    [[nodiscard]] Stage stage() const { return stage_; }
    [[nodiscard]] const SshTarget& sshTarget() const { return target_; }
    [[nodiscard]] const std::optional<RelaunchPlan>& plan() const { return plan_; }
    // Where the tunnel reaches the agent (127.0.0.1:PORT, with its token); once ready.
    [[nodiscard]] const AgentTarget& agentTarget() const { return agent_; }
    // The agent's address on the host, as it printed it ("127.0.0.1:41733").
    [[nodiscard]] QString remoteEndpoint() const { return remoteEndpoint_; }
    [[nodiscard]] double secondsSinceStart() const;
    // The ssh program: $TTRACE_SSH, else "ssh" from PATH.
    static QString sshProgram();

signals:
    void planReady(const ttrace::ui::RelaunchPlan& plan);
    // A line of what the agent's start prints (its log), as it arrives.
    void progress(const QString& line);
    void ready(const ttrace::ui::AgentTarget& target);
    void failed(const QString& why);
    // The agent (or its tunnel) ended after it was ready.
    void ended(const QString& why);

private:
    QProcess* newSsh(const QStringList& arguments);
    void onPlanFinished(int code);
    void onServeOutput();
    void onServeError();
    void onServeFinished(int code);
    void onServing(const QString& endpoint, const QString& token);
    void probeTunnel();
    void onTunnelFinished(int code);
    void fail(const QString& why);
    // "ssh to HOST failed (exit N): <its last words>"
    [[nodiscard]] QString sshFailure(QProcess* process, int code, const QString& what) const;
    void endProcess(QProcess*& process);

    Stage stage_ = Stage::Idle;
    SshTarget target_;
    std::optional<RelaunchPlan> plan_;
    AgentTarget agent_;
    QString remoteEndpoint_;
    QProcess* planSsh_ = nullptr;
    QProcess* serveSsh_ = nullptr;
    QProcess* tunnelSsh_ = nullptr;
    QTimer* probe_;
    QElapsedTimer clock_;
    QByteArray serveOut_;
    QByteArray serveErr_;
    QStringList lastLines_; // the agent's last log lines, for an error that quotes them
};

} // namespace ttrace::ui
