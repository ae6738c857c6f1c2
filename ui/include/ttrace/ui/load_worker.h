#pragma once
// Does the long work of opening and comparing two bundles through the core engine. Lives on the
// LoadController's thread; everything it reports goes out as signals tagged with the job id, so
// the controller can drop results of a job that was superseded or cancelled.
#include "ttrace/diff_engine.h"
#include "ttrace/manifest.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

namespace ttrace::ui {

class LoadWorker : public QObject {
    Q_OBJECT
public:
    using CancelFlag = std::shared_ptr<std::atomic<bool>>;

    explicit LoadWorker(QObject* parent = nullptr);

    // Runs on the worker thread: opens both bundles, reports their metadata, then diffs them,
    // streaming tensor results in batches.
    void run(quint64 job, const QString& reference, const QString& candidate,
             const ttrace::DiffOptions& options, const CancelFlag& cancel);

private:
    // Emits metadataReady from the manifests alone; false when either cannot be read.
    bool showManifests(quint64 job, const QString& reference, const QString& candidate);
    void runDiff(quint64 job, const QString& reference, const QString& candidate,
                 const ttrace::DiffOptions& options, const CancelFlag& cancel);

signals:
    void progress(quint64 job, double fraction, const QString& what);
    void metadataReady(quint64 job, const ttrace::Manifest& reference,
                       const ttrace::Manifest& candidate);
    void tensorsCompared(quint64 job, const std::vector<ttrace::TensorResult>& batch);
    // Opening found problems; `fatal` when the bundles cannot be compared at all.
    void problemsFound(quint64 job, const ttrace::Diagnostics& problems, bool fatal);
    void finished(quint64 job, const std::shared_ptr<const ttrace::DiffResult>& result);
    void cancelled(quint64 job);
};

} // namespace ttrace::ui
