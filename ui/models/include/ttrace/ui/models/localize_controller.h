#pragma once
// Runs localize jobs off the GUI thread, one at a time: starts a job on its own thread, forwards
// its progress and verdicts as queued signals (handlers run on the GUI thread), cancels it
// through the client's cancel token, and drops whatever a superseded job still reports.
#include "ttrace/replay/localize_result.h"
#include "ttrace/ui/models/localize_job.h"

#include <QObject>
#include <QString>

#include <memory>
#include <thread>

namespace ttrace::ui {

class LocalizeController : public QObject {
    Q_OBJECT
public:
    explicit LocalizeController(QObject* parent = nullptr);
    ~LocalizeController() override; // cancels a running job and waits for its thread

    // False when a job is still running (cancel it first) or there is no client.
    bool start(std::shared_ptr<replay::AgentClient> client, const replay::AgentInfo& agent,
               LocalizeRequest request);
    void cancel();
    [[nodiscard]] bool isRunning() const { return running_; }

signals:
    void started(int expectedReplays);
    void replaying(const QString& module, int done, int expected);
    void verdictReady(const ttrace::replay::ModuleVerdict& verdict);
    // While a replay runs: the agent answered a liveness ping.
    void waiting(double elapsedSeconds, bool agentBusy);
    void finished(const ttrace::replay::LocalizeResult& result);

private:
    void join();

    std::thread thread_;
    replay::CancelToken cancel_;
    quint64 job_ = 0;
    bool running_ = false;
    int done_ = 0;
    int expected_ = 0;
};

} // namespace ttrace::ui
