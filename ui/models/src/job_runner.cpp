#include "ttrace/ui/models/job_runner.h"

#include "job_mailbox.h"

#include <limits>
#include <utility>

namespace ttrace::ui {

JobRunner::JobRunner(const QString& threadName, QObject* parent)
    : QObject(parent)
    , mailbox_(std::make_shared<JobMailbox>())
    , executor_(new QObject) {
    mailbox_->runner = this;
    thread_.setObjectName(threadName);
    executor_->moveToThread(&thread_);
}

JobRunner::~JobRunner() {
    {
        std::lock_guard lock(mailbox_->mutex);
        mailbox_->runner = nullptr;
    }
    // Queued work sees a job id that is never current and returns at once; the running work
    // sees its token cancelled at its next check.
    latest_.store(std::numeric_limits<quint64>::max());
    token_.cancel();
    thread_.quit();
    thread_.wait();
    delete executor_; // its thread has finished: deleting it here is safe
}

JobContext JobRunner::supersede() {
    token_.cancel();
    token_ = JobToken();
    current_ += 1;
    live_ = true;
    latest_.store(current_);
    return JobContext(current_, token_, mailbox_);
}

JobContext JobRunner::start(Work work) {
    JobContext job = supersede();
    if (!thread_.isRunning()) {
        thread_.start();
    }
    QMetaObject::invokeMethod(
        executor_,
        [this, job, work = std::move(work)] {
            if (job.id() == latest_.load()) {
                work(job);
            }
        },
        Qt::QueuedConnection);
    return job;
}

JobContext JobRunner::begin() {
    return supersede();
}

void JobRunner::cancel() {
    token_.cancel();
}

void JobRunner::end() {
    live_ = false;
}

void JobRunner::deliver(quint64 job, const std::function<void()>& deliver) {
    if (job == current_ && live_) {
        deliver();
    }
}

} // namespace ttrace::ui
