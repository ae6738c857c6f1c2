#include "ttrace/ui/models/localize_controller.h"

namespace ttrace::ui {

using namespace ttrace::replay;

LocalizeController::LocalizeController(QObject* parent)
    : QObject(parent) {
    qRegisterMetaType<ModuleVerdict>("ttrace::replay::ModuleVerdict");
    qRegisterMetaType<LocalizeResult>("ttrace::replay::LocalizeResult");
}

LocalizeController::~LocalizeController() = default; // the runner cancels and waits

bool LocalizeController::start(std::shared_ptr<AgentClient> client, const AgentInfo& agent,
                               LocalizeRequest request) {
    if (runner_.isRunning() || !client) {
        return false;
    }
    done_ = 0;
    expected_ = std::max(expectedReplays(request), 1);
    runner_.start([this, client = std::move(client), agent, request = std::move(request)](
                      const JobContext& job) { run(job, client, agent, request); });
    emit started(expected_);
    return true;
}

void LocalizeController::run(const JobContext& job, const std::shared_ptr<AgentClient>& client,
                             const AgentInfo& agent, const LocalizeRequest& request) {
    LocalizeCallbacks callbacks;
    callbacks.replaying = [this, job](const Suspect& s) {
        job.post([this, module = QString::fromStdString(s.module)] {
            emit replaying(module, done_, expected_);
        });
    };
    callbacks.verdict = [this, job](const ModuleVerdict& v) {
        job.post([this, v] {
            ++done_;
            expected_ = std::max(expected_, done_);
            emit verdictReady(v);
        });
    };
    callbacks.waiting = [this, job](const RequestProgress& p) { // the client's owner thread
        job.post([this, p] { emit waiting(p.elapsedSeconds, p.agentBusy); });
    };
    auto result = runLocalize(*client, agent, request, job.token().replayToken(), callbacks);
    job.post([this, result = std::move(result)] {
        runner_.end();
        emit finished(result);
    });
}

void LocalizeController::cancel() {
    runner_.cancel();
}

} // namespace ttrace::ui
