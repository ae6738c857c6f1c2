#include "ttrace/ui/models/localize_controller.h"

namespace ttrace::ui {

using namespace ttrace::replay;

LocalizeController::LocalizeController(QObject* parent)
    : QObject(parent) {
    qRegisterMetaType<ModuleVerdict>("ttrace::replay::ModuleVerdict");
    qRegisterMetaType<LocalizeResult>("ttrace::replay::LocalizeResult");
}

LocalizeController::~LocalizeController() {
    cancel_.cancel();
    join(); // the job posts to this object only through queued calls, dropped with it
}

void LocalizeController::join() {
    if (thread_.joinable()) {
        thread_.join();
    }
}

bool LocalizeController::start(std::shared_ptr<AgentClient> client, const AgentInfo& agent,
                               LocalizeRequest request) {
    if (running_ || !client) {
        return false;
    }
    join(); // the previous job has reported its end; its thread is about to return
    cancel_ = CancelToken();
    const quint64 job = ++job_;
    running_ = true;
    done_ = 0;
    expected_ = std::max(expectedReplays(request), 1);
    emit started(expected_);
    // Every report is re-posted to this object; `job` drops reports of a superseded job.
    auto post = [this, job](auto f) {
        QMetaObject::invokeMethod(
            this,
            [this, job, f = std::move(f)] {
                if (job == job_) {
                    f();
                }
            },
            Qt::QueuedConnection);
    };
    LocalizeCallbacks callbacks;
    callbacks.replaying = [this, post](const Suspect& s) {
        post([this, module = QString::fromStdString(s.module)] {
            emit replaying(module, done_, expected_);
        });
    };
    callbacks.verdict = [this, post](const ModuleVerdict& v) {
        post([this, v] {
            ++done_;
            expected_ = std::max(expected_, done_);
            emit verdictReady(v);
        });
    };
    callbacks.waiting = [this, post](const RequestProgress& p) {
        post([this, p] { emit waiting(p.elapsedSeconds, p.agentBusy); });
    };
    thread_ = std::thread([this, post, client = std::move(client), agent, cancel = cancel_,
                           request = std::move(request), callbacks] {
        auto result = runLocalize(*client, agent, request, cancel, callbacks);
        post([this, result = std::move(result)] {
            running_ = false;
            emit finished(result);
        });
    });
    return true;
}

void LocalizeController::cancel() {
    cancel_.cancel();
}

} // namespace ttrace::ui
