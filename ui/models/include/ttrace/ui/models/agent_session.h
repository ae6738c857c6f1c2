#pragma once
// The explorer's connection to a localize agent: owns the core's AgentClient (whose owner
// thread does all socket work), runs the versioned handshake, and reports the state as a
// signal on the GUI thread. Completions of the client arrive on its owner thread and are
// posted through a JobRunner job (one per handshake), so no slot of this object ever runs
// elsewhere and the answer of a superseded handshake is dropped.
#include "ttrace/replay/agent_client.h"
#include "ttrace/ui/models/agent_target.h"
#include "ttrace/ui/models/job_runner.h"

#include <QObject>
#include <QString>

#include <memory>
#include <optional>

namespace ttrace::ui {

class AgentSession : public QObject {
    Q_OBJECT
public:
    enum class State { Disconnected, Connecting, Connected, Failed };
    Q_ENUM(State)

    explicit AgentSession(QObject* parent = nullptr);
    ~AgentSession() override;

    // Drops any current connection and handshakes with `target`.
    void connectTo(const AgentTarget& target);
    void reconnect() { connectTo(target_); }
    void disconnectAgent();

    [[nodiscard]] State state() const { return state_; }
    [[nodiscard]] const AgentTarget& target() const { return target_; }
    [[nodiscard]] const replay::AgentInfo* info() const { return info_ ? &*info_ : nullptr; }
    [[nodiscard]] QString error() const { return error_; }
    // The connected client (shared with a localize job running on its own thread).
    [[nodiscard]] std::shared_ptr<replay::AgentClient> client() const;
    // A localize job is using the agent.
    void setBusy(bool busy);
    [[nodiscard]] bool busy() const { return busy_; }
    // "connected to 127.0.0.1:41733 · ttrace 0.1.0 · TP2 x DP2, 4 ranks", "disconnected", ...
    [[nodiscard]] QString statusText() const;

signals:
    void stateChanged(ttrace::ui::AgentSession::State state);

private:
    void onHello(const replay::Result<replay::AgentInfo>& reply);
    void fail(const QString& why);

    State state_ = State::Disconnected;
    AgentTarget target_;
    std::shared_ptr<replay::AgentClient> client_;
    std::optional<replay::AgentInfo> info_;
    QString error_;
    // The handshake as a job: its work runs on the client's owner thread, never on the
    // runner's own, which is therefore never started.
    JobRunner handshake_{QStringLiteral("ttrace-agent-session")};
    bool busy_ = false;
};

// "TP2 x DP2, 4 ranks": the agent's layout as the diff report words one
// (parallel_layout_text.h).
QString agentLayout(const replay::AgentInfo& info);

} // namespace ttrace::ui
