#include "ttrace/ui/models/job_context.h"

#include "job_mailbox.h"
#include "ttrace/ui/models/job_runner.h"

#include <utility>

namespace ttrace::ui {

JobContext::JobContext(quint64 id, JobToken token, std::shared_ptr<JobMailbox> mailbox)
    : id_(id)
    , token_(std::move(token))
    , mailbox_(std::move(mailbox)) {}

void JobContext::post(std::function<void()> deliver) const {
    // The lock keeps the runner alive while the event is queued; queued events of one sender
    // thread arrive in the order posted, and Qt drops them if the runner is deleted first.
    std::lock_guard lock(mailbox_->mutex);
    JobRunner* runner = mailbox_->runner;
    if (!runner) {
        return;
    }
    QMetaObject::invokeMethod(
        runner,
        [runner, job = id_, deliver = std::move(deliver)] { runner->deliver(job, deliver); },
        Qt::QueuedConnection);
}

} // namespace ttrace::ui
