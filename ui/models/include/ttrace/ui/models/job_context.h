#pragma once
// What a background job's work holds while it runs: its id, its cancel token, and the one way
// its results reach the GUI thread. Copies are cheap and may be used from any thread (the
// runner's worker thread, the engine's pool, the agent client's owner thread).
#include "ttrace/ui/models/job_token.h"

#include <QtGlobal>

#include <functional>
#include <memory>

namespace ttrace::ui {

struct JobMailbox;

class JobContext {
public:
    [[nodiscard]] quint64 id() const { return id_; }
    [[nodiscard]] const JobToken& token() const { return token_; }
    [[nodiscard]] bool cancelled() const { return token_.cancelled(); }
    // Runs `deliver` on the runner's (GUI) thread, after everything this job posted before it,
    // unless by then the job has been superseded or ended: the one place where results of a
    // superseded job are dropped. Never blocks; does nothing once the runner is gone.
    void post(std::function<void()> deliver) const;

private:
    friend class JobRunner;
    JobContext(quint64 id, JobToken token, std::shared_ptr<JobMailbox> mailbox);

    quint64 id_ = 0;
    JobToken token_;
    std::shared_ptr<JobMailbox> mailbox_;
};

} // namespace ttrace::ui
