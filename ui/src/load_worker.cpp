#include "ttrace/ui/load_worker.h"

#include "ttrace/session/diff_session.h"

#include <exception>

#include <QElapsedTimer>

#include <atomic>
#include <mutex>

namespace ttrace::ui {
namespace {

// Collects tensor results from the engine's worker threads and hands them on in batches, so the
// GUI thread gets a few dozen events per second instead of one per tensor.
class ResultBatcher {
public:
    explicit ResultBatcher(std::function<void(std::vector<TensorResult>)> flush)
        : flush_(std::move(flush)) {
        timer_.start();
    }
    void add(const TensorResult& result) {
        std::vector<TensorResult> out;
        {
            std::lock_guard lock(mutex_);
            pending_.push_back(result);
            if (timer_.elapsed() < kIntervalMs) {
                return;
            }
            timer_.restart();
            out.swap(pending_);
        }
        flush_(std::move(out));
    }
    void finish() {
        std::vector<TensorResult> out;
        {
            std::lock_guard lock(mutex_);
            out.swap(pending_);
        }
        if (!out.empty()) {
            flush_(std::move(out));
        }
    }

private:
    static constexpr qint64 kIntervalMs = 40;
    std::function<void(std::vector<TensorResult>)> flush_;
    std::mutex mutex_;
    std::vector<TensorResult> pending_;
    QElapsedTimer timer_;
};

// The session's reports as the worker's signals, tagged with the job id. Progress is
// throttled to whole permille steps (the engine reports once per tensor); tensor results go
// out in batches.
class SessionSignals final : public DiffSessionListener {
public:
    SessionSignals(LoadWorker& worker, quint64 job, LoadWorker::CancelFlag cancel)
        : worker_(worker)
        , job_(job)
        , cancel_(std::move(cancel))
        , batcher_([this](std::vector<TensorResult> batch) {
            emit worker_.tensorsCompared(job_, batch);
        }) {}

    bool wantsProvisional() const override { return true; }
    void manifestsRead(const Manifest* reference, const Manifest* candidate) override {
        treeShown_ = reference && candidate;
        if (treeShown_) {
            emit worker_.metadataReady(job_, *reference, *candidate);
        }
    }
    bool progress(double fraction, std::string_view what) override {
        const int permille = static_cast<int>(fraction * 1000.0);
        if (lastPermille_.exchange(permille) != permille) {
            emit worker_.progress(
                job_, fraction,
                QString::fromUtf8(what.data(), static_cast<qsizetype>(what.size())));
        }
        return !cancel_->load();
    }
    void provisionalResult(const std::shared_ptr<const DiffResult>& result) override {
        emit worker_.provisional(job_, result);
    }
    void provisionalStale() override { emit worker_.cacheStale(job_); }
    void bundlesOpened(const Manifest* reference, const Manifest* candidate,
                       const Diagnostics& problems) override;
    void tensorCompared(const TensorResult& result) override { batcher_.add(result); }
    void finalResult(const std::shared_ptr<const DiffResult>& result) override;
    void cancelled() override {
        batcher_.finish();
        emit worker_.cancelled(job_);
    }

private:
    LoadWorker& worker_;
    quint64 job_;
    LoadWorker::CancelFlag cancel_;
    ResultBatcher batcher_;
    std::atomic<int> lastPermille_{-1};
    bool treeShown_ = false;
    bool fatal_ = false;
};

void SessionSignals::bundlesOpened(const Manifest* reference, const Manifest* candidate,
                                   const Diagnostics& problems) {
    if ((reference || candidate) && !treeShown_) {
        // A side that cannot be opened is shown as such (world size 0), never described with
        // the other side's metadata.
        Manifest unopened;
        unopened.worldSize = 0;
        emit worker_.metadataReady(job_, reference ? *reference : unopened,
                                   candidate ? *candidate : unopened);
    }
    // Only a bundle that cannot be opened at all stops the comparison.
    fatal_ = !reference || !candidate;
    if (!problems.empty() || fatal_) {
        emit worker_.problemsFound(job_, problems, fatal_);
    }
}

void SessionSignals::finalResult(const std::shared_ptr<const DiffResult>& result) {
    batcher_.finish();
    if (cancel_->load()) {
        emit worker_.cancelled(job_); // asked for after the session's last progress report
        return;
    }
    if (fatal_) {
        return; // reported when opened; the controller has stopped this job
    }
    emit worker_.progress(job_, 1.0, LoadWorker::tr("Done"));
    emit worker_.finished(job_, result);
}

} // namespace

LoadWorker::LoadWorker(QObject* parent)
    : QObject(parent) {}

void LoadWorker::run(quint64 job, const QString& reference, const QString& candidate,
                     const DiffOptions& options, const CancelFlag& cancel) {
    // The worker thread is the boundary: whatever escapes the engine is shown with its reason
    // instead of ending the thread (and the application) silently.
    try {
        emit progress(job, 0.0, tr("Opening %1").arg(reference));
        SessionSignals listener(*this, job, cancel);
        runDiffSession(std::filesystem::path(reference.toStdString()),
                       std::filesystem::path(candidate.toStdString()), options, listener);
    } catch (const std::exception& e) {
        emit problemsFound(job, {makeError(DiagnosticCode::InternalError, "loading", e.what())},
                           true);
    } catch (...) {
        emit problemsFound(
            job, {makeError(DiagnosticCode::InternalError, "loading", "unknown exception")}, true);
    }
}

} // namespace ttrace::ui
