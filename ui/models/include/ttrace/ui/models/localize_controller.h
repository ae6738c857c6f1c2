#pragma once
// Runs localize jobs off the GUI thread, one at a time, on its JobRunner's thread: forwards the
// job's progress and verdicts as signals on the GUI thread and cancels it through the runner's
// token, which the agent client polls. The runner drops whatever a superseded job still reports.
#include "ttrace/replay/localize_result.h"
#include "ttrace/ui/models/job_runner.h"
#include "ttrace/ui/models/localize_job.h"

#include <QObject>
#include <QString>

#include <memory>

namespace ttrace::ui {

class LocalizeController : public QObject {
    Q_OBJECT
public:
    explicit LocalizeController(QObject* parent = nullptr);
    ~LocalizeController() override; // cancels a running job and waits for its work

    // False when a job is still running (cancel it first) or there is no client.
    bool start(std::shared_ptr<replay::AgentClient> client, const replay::AgentInfo& agent,
               LocalizeRequest request);
    void cancel();
    [[nodiscard]] bool isRunning() const { return runner_.isRunning(); }

signals:
    void started(int expectedReplays);
    void replaying(const QString& module, int done, int expected);
    void verdictReady(const ttrace::replay::ModuleVerdict& verdict);
    // While a replay runs: the agent answered a liveness ping.
    void waiting(double elapsedSeconds, bool agentBusy);
    void finished(const ttrace::replay::LocalizeResult& result);

private:
    // On the runner's thread: the localize run, its reports posted to the GUI thread.
    void run(const JobContext& job, const std::shared_ptr<replay::AgentClient>& client,
             const replay::AgentInfo& agent, const LocalizeRequest& request);

    JobRunner runner_{QStringLiteral("ttrace-localize")};
    int done_ = 0;
    int expected_ = 0;
};

} // namespace ttrace::ui
