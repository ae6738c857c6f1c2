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
    // What became of the cached comparison the pair's file stamps pointed at.
    enum class Seen { None, Verified, Stale, Cancelled };

    // Emits metadataReady from the manifests alone; false when either cannot be read.
    bool showManifests(quint64 job, const QString& reference, const QString& candidate);
    // Shows the entry the stamps point at as provisional, then checks it by content: finished
    // when the bytes are those it was computed from, cacheStale when they are not.
    Seen showSeen(quint64 job, const QString& reference, const QString& candidate,
                  const ttrace::DiffOptions& options, const CancelFlag& cancel);
    void runDiff(quint64 job, const QString& reference, const QString& candidate,
                 const ttrace::DiffOptions& options, const CancelFlag& cancel);
    // Opens and compares (the summary cache is consulted by content first).
    void compare(quint64 job, const QString& reference, const QString& candidate,
                 const ttrace::DiffOptions& options, const CancelFlag& cancel, bool treeShown);

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
