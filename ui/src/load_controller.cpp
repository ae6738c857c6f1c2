#include "ttrace/ui/load_controller.h"

#include "ttrace/ui/load_worker.h"

#include <type_traits>

namespace ttrace::ui {

LoadController::LoadController(QObject* parent)
    : QObject(parent) {}

LoadController::~LoadController() = default; // the runner cancels the job and waits for it

template <typename... From, typename... To>
void LoadController::relay(LoadWorker& worker, const JobContext& job,
                           void (LoadWorker::*from)(quint64, From...),
                           void (LoadController::*to)(To...), bool last) {
    // Direct: runs on the emitting thread (the worker's or the engine's) and only posts.
    connect(
        &worker, from, &worker,
        [this, job, to, last](quint64, From... args) {
            job.post([this, to, last, ... args = std::decay_t<From>(args)] {
                if (last) {
                    runner_.end();
                }
                (this->*to)(args...);
            });
        },
        Qt::DirectConnection);
}

void LoadController::run(const JobContext& job, const QString& reference, const QString& candidate,
                         const DiffOptions& options) {
    LoadWorker worker;
    relay(worker, job, &LoadWorker::progress, &LoadController::progress);
    relay(worker, job, &LoadWorker::metadataReady, &LoadController::metadataReady);
    relay(worker, job, &LoadWorker::tensorsCompared, &LoadController::tensorsCompared);
    relay(worker, job, &LoadWorker::provisional, &LoadController::provisional);
    relay(worker, job, &LoadWorker::cacheStale, &LoadController::cacheStale);
    relay(worker, job, &LoadWorker::finished, &LoadController::finished, true);
    relay(worker, job, &LoadWorker::cancelled, &LoadController::cancelled, true);
    // Fatal problems are the job's end too: reported, then `failed`.
    connect(
        &worker, &LoadWorker::problemsFound, &worker,
        [this, job](quint64, const Diagnostics& problems, bool fatal) {
            job.post([this, problems, fatal] {
                emit problemsFound(problems, fatal);
                if (fatal) {
                    runner_.end();
                    emit failed();
                }
            });
        },
        Qt::DirectConnection);
    worker.run(job.id(), reference, candidate, options, job.token().flag());
}

void LoadController::start(const QString& reference, const QString& candidate,
                           const DiffOptions& options) {
    runner_.start([this, reference, candidate, options](const JobContext& job) {
        run(job, reference, candidate, options);
    });
    emit started();
}

void LoadController::cancel() {
    if (runner_.isRunning()) {
        runner_.cancel();
    }
}

} // namespace ttrace::ui
