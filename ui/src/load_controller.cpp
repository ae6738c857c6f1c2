#include "ttrace/ui/load_controller.h"

namespace ttrace::ui {

LoadController::LoadController(QObject* parent)
    : QObject(parent)
    , worker_(new LoadWorker) {
    thread_.setObjectName(QStringLiteral("ttrace-loader"));
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);

    // The worker emits from its own thread (and the engine's); these connections are queued, so
    // every handler below runs on the GUI thread. Results of an older job are dropped.
    connect(worker_, &LoadWorker::progress, this, [this](quint64 job, double f, const QString& w) {
        if (job == job_ && running_) {
            emit progress(f, w);
        }
    });
    connect(worker_, &LoadWorker::metadataReady, this,
            [this](quint64 job, const Manifest& ref, const Manifest& cand) {
                if (job == job_ && running_) {
                    emit metadataReady(ref, cand);
                }
            });
    connect(worker_, &LoadWorker::tensorsCompared, this,
            [this](quint64 job, const std::vector<TensorResult>& batch) {
                if (job == job_ && running_) {
                    emit tensorsCompared(batch);
                }
            });
    connect(worker_, &LoadWorker::problemsFound, this,
            [this](quint64 job, const Diagnostics& problems, bool fatal) {
                if (job != job_ || !running_) {
                    return;
                }
                emit problemsFound(problems, fatal);
                if (fatal) {
                    running_ = false;
                    emit failed();
                }
            });
    connect(worker_, &LoadWorker::provisional, this,
            [this](quint64 job, const std::shared_ptr<const DiffResult>& result) {
                if (job == job_ && running_) {
                    emit provisional(result);
                }
            });
    connect(worker_, &LoadWorker::cacheStale, this, [this](quint64 job) {
        if (job == job_ && running_) {
            emit cacheStale();
        }
    });
    connect(worker_, &LoadWorker::finished, this,
            [this](quint64 job, const std::shared_ptr<const DiffResult>& result) {
                if (job == job_ && running_) {
                    running_ = false;
                    emit finished(result);
                }
            });
    connect(worker_, &LoadWorker::cancelled, this, [this](quint64 job) {
        if (job == job_ && running_) {
            running_ = false;
            emit cancelled();
        }
    });
    thread_.start();
}

LoadController::~LoadController() {
    if (cancel_) {
        cancel_->store(true);
    }
    thread_.quit();
    thread_.wait();
}

void LoadController::start(const QString& reference, const QString& candidate,
                           const DiffOptions& options) {
    if (cancel_) {
        cancel_->store(true);
    }
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    const quint64 job = ++job_;
    running_ = true;
    emit started();
    QMetaObject::invokeMethod(
        worker_,
        [worker = worker_, job, reference, candidate, options, flag = cancel_] {
            worker->run(job, reference, candidate, options, flag);
        },
        Qt::QueuedConnection);
}

void LoadController::cancel() {
    if (cancel_ && running_) {
        cancel_->store(true);
    }
}

} // namespace ttrace::ui
