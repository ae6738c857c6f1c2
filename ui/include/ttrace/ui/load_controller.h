#pragma once
// Loads and compares a pair of bundles in the background: runs a LoadWorker per job on its
// JobRunner's thread and re-emits what the worker reports as signals on the GUI thread. The
// runner drops whatever a superseded or ended job still reports.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/io/manifest.h"
#include "ttrace/ui/models/job_runner.h"

#include <QObject>

namespace ttrace::ui {

class LoadWorker;

class LoadController : public QObject {
    Q_OBJECT
public:
    explicit LoadController(QObject* parent = nullptr);
    ~LoadController() override;

    // Starts comparing two bundle directories; a job still running is cancelled first.
    void start(const QString& reference, const QString& candidate,
               const ttrace::DiffOptions& options = {});
    // Asks the running job to stop; `cancelled` follows once the engine has noticed.
    void cancel();
    [[nodiscard]] bool isRunning() const { return runner_.isRunning(); }

signals:
    void started();
    void progress(double fraction, const QString& what);
    void metadataReady(const ttrace::Manifest& reference, const ttrace::Manifest& candidate);
    void tensorsCompared(const std::vector<ttrace::TensorResult>& batch);
    void problemsFound(const ttrace::Diagnostics& problems, bool fatal);
    // A cached comparison found from file stamps, not yet checked against the bundles' bytes;
    // `finished` with the same result once checked, or `cacheStale` and a fresh comparison.
    void provisional(const std::shared_ptr<const ttrace::DiffResult>& result);
    void cacheStale();
    void finished(const std::shared_ptr<const ttrace::DiffResult>& result);
    void failed();
    void cancelled();

private:
    // On the runner's thread: wires a worker's signals to the job's posts and runs it.
    void run(const JobContext& job, const QString& reference, const QString& candidate,
             const ttrace::DiffOptions& options);
    // Forwards the worker's `from(job, args...)` as this object's `to(args...)` on the GUI
    // thread; with `last`, the job ends as it is delivered (nothing of it follows).
    template <typename... From, typename... To>
    void relay(LoadWorker& worker, const JobContext& job,
               void (LoadWorker::*from)(quint64, From...), void (LoadController::*to)(To...),
               bool last = false);

    JobRunner runner_{QStringLiteral("ttrace-loader")};
};

} // namespace ttrace::ui
