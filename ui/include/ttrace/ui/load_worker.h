#pragma once
// Runs the core's diff session (ttrace/session/diff_session.h) for the explorer. Lives on the
// LoadController's thread; everything the session reports goes out as signals tagged with the
// job id, so the controller can drop results of a job that was superseded or cancelled.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/io/manifest.h"

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

    // Runs on the worker thread: the manifests' metadata, a provisional result from the summary
    // cache and its check, or the open and the diff, streaming tensor results in batches.
    void run(quint64 job, const QString& reference, const QString& candidate,
             const ttrace::DiffOptions& options, const CancelFlag& cancel);

signals:
    void progress(quint64 job, double fraction, const QString& what);
    void metadataReady(quint64 job, const ttrace::Manifest& reference,
                       const ttrace::Manifest& candidate);
    void tensorsCompared(quint64 job, const std::vector<ttrace::TensorResult>& batch);
    // Opening found problems; `fatal` when the bundles cannot be compared at all.
    void problemsFound(quint64 job, const ttrace::Diagnostics& problems, bool fatal);
    // A cached comparison found from the file stamps alone, shown until it is checked: the
    // same result follows in `finished` if the bundles' bytes are those it was computed from,
    // else cacheStale and a fresh comparison.
    void provisional(quint64 job, const std::shared_ptr<const ttrace::DiffResult>& result);
    void cacheStale(quint64 job);
    void finished(quint64 job, const std::shared_ptr<const ttrace::DiffResult>& result);
    void cancelled(quint64 job);
};

} // namespace ttrace::ui
