#pragma once
// Runs the explorer's background work (loading, localizing, element inspection), one job at a
// time per runner, on the runner's own thread (RenderDoc's "one owner thread"): each job gets an
// id and a cancel token, its results are posted to the GUI thread in order, and whatever a
// superseded or ended job still posts is dropped here and nowhere else. Work that runs on a
// thread of its own (the agent client's) takes a job with begin() and posts the same way.
#include "ttrace/ui/models/job_context.h"
#include "ttrace/ui/models/job_token.h"

#include <QObject>
#include <QString>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>

namespace ttrace::ui {

class JobRunner : public QObject {
    Q_OBJECT
public:
    using Work = std::function<void(const JobContext&)>;

    explicit JobRunner(const QString& threadName, QObject* parent = nullptr);
    // Cancels the current job and waits for the work on the thread to return; nothing is
    // delivered after this starts.
    ~JobRunner() override;

    // Supersedes the current job (its token is cancelled, what it still posts is dropped) and
    // queues `work` on the runner's thread after any work still there; a job superseded before
    // its turn never runs. Returns the new job's context.
    JobContext start(Work work);
    // Supersedes the current job like start(), for work that runs elsewhere and posts here.
    JobContext begin();
    // Cancels the current job's token; the job still delivers what it posts (its own end).
    void cancel();
    // Ends the current job: nothing more of it is delivered. Called from a delivery that is the
    // job's last word, or to abandon the job.
    void end();
    // A job was started or begun and has not ended.
    [[nodiscard]] bool isRunning() const { return live_; }
    [[nodiscard]] quint64 currentJob() const { return current_; }

private:
    friend class JobContext;
    JobContext supersede();
    // On the GUI thread: runs `deliver` when `job` is still the current, live job.
    void deliver(quint64 job, const std::function<void()>& deliver);

    std::shared_ptr<JobMailbox> mailbox_;
    QThread thread_;                 // started by the first start()
    QObject* executor_ = nullptr;    // lives on thread_; runs the queued work
    std::atomic<quint64> latest_{0}; // read on thread_ to skip superseded queued work
    quint64 current_ = 0;
    bool live_ = false;
    JobToken token_;
};

} // namespace ttrace::ui
