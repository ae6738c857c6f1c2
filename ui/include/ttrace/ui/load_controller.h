#pragma once
// Owns the one loading thread of the explorer (RenderDoc's "one owner thread" pattern): starts
// jobs on it, forwards their progress and results to the GUI thread as queued signals, cancels
// them, and drops whatever a superseded job still reports.
#include "ttrace/diff_engine.h"
#include "ttrace/manifest.h"
#include "ttrace/ui/load_worker.h"

#include <QObject>
#include <QThread>

namespace ttrace::ui {

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
    [[nodiscard]] bool isRunning() const { return running_; }

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
    QThread thread_;
    LoadWorker* worker_ = nullptr; // lives on thread_, deleted when it finishes
    quint64 job_ = 0;
    LoadWorker::CancelFlag cancel_;
    bool running_ = false;
};

} // namespace ttrace::ui
