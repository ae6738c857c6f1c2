#include "ttrace/ui/load_worker.h"

#include "ttrace/bundle.h"
#include "ttrace/cache_fingerprint.h"
#include "ttrace/diff_cache.h"

#include <exception>

#include <QElapsedTimer>

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

} // namespace

LoadWorker::LoadWorker(QObject* parent)
    : QObject(parent) {}

void LoadWorker::run(quint64 job, const QString& reference, const QString& candidate,
                     const DiffOptions& options, const CancelFlag& cancel) {
    // The worker thread is the boundary: whatever escapes the engine is shown with its reason
    // instead of ending the thread (and the application) silently.
    try {
        runDiff(job, reference, candidate, options, cancel);
    } catch (const std::exception& e) {
        emit problemsFound(job, {makeError(DiagnosticCode::InternalError, "loading", e.what())},
                           true);
    } catch (...) {
        emit problemsFound(
            job, {makeError(DiagnosticCode::InternalError, "loading", "unknown exception")}, true);
    }
}

bool LoadWorker::showManifests(quint64 job, const QString& reference, const QString& candidate) {
    Diagnostics ignored; // the open reports them, with the rest of what it finds
    const auto ref = readManifest(std::filesystem::path(reference.toStdString()), ignored);
    const auto cand = readManifest(std::filesystem::path(candidate.toStdString()), ignored);
    if (!ref || !cand) {
        return false;
    }
    emit metadataReady(job, *ref, *cand);
    return true;
}

LoadWorker::Seen LoadWorker::showSeen(quint64 job, const QString& reference,
                                      const QString& candidate, const DiffOptions& options,
                                      const CancelFlag& cancel) {
    const std::filesystem::path ref(reference.toStdString());
    const std::filesystem::path cand(candidate.toStdString());
    const auto fingerprint = diffCacheFingerprint(ref, cand, options);
    auto seen = loadSeenDiff(fingerprint);
    if (!seen) {
        return Seen::None;
    }
    const auto result = std::make_shared<const DiffResult>(std::move(seen->result));
    emit provisional(job, result);
    // The stamps never vouch for the entry: the CRC of every byte does, read here, off the GUI
    // thread (and remembered for this process, so a comparison that follows reads nothing).
    const QString checking = tr("Cached comparison shown; checking it against the bundles' bytes");
    emit progress(job, 0.0, checking);
    const auto key = diffCacheKey(ref, cand, options, [&](double f, std::string_view) {
        emit progress(job, f, checking);
        return !cancel->load();
    });
    if (cancel->load()) {
        return Seen::Cancelled;
    }
    if (key.empty() || key != seen->contentKey) {
        emit cacheStale(job);
        return Seen::Stale;
    }
    rememberFingerprint(fingerprint, key); // marks the pointer as used
    if (!result->diagnostics.empty()) {
        emit problemsFound(job, result->diagnostics, false);
    }
    emit progress(job, 1.0, tr("Done"));
    emit finished(job, result);
    return Seen::Verified;
}

void LoadWorker::runDiff(quint64 job, const QString& reference, const QString& candidate,
                         const DiffOptions& options, const CancelFlag& cancel) {
    // The tree first, from the two manifests alone, before any rank file is read (the content
    // check and the open read every byte); problems in them are reported by the open below.
    const bool treeShown = showManifests(job, reference, candidate);
    if (treeShown && options.useCache) {
        const Seen seen = showSeen(job, reference, candidate, options, cancel);
        if (seen == Seen::Cancelled) {
            emit cancelled(job);
            return;
        }
        if (seen == Seen::Verified) {
            return;
        }
    }
    compare(job, reference, candidate, options, cancel, treeShown);
}

void LoadWorker::compare(quint64 job, const QString& reference, const QString& candidate,
                         const DiffOptions& options, const CancelFlag& cancel, bool treeShown) {
    // Throttled to whole permille steps: the engine reports once per tensor.
    auto lastPermille = std::make_shared<std::atomic<int>>(-1);
    ResultBatcher batcher(
        [this, job](std::vector<TensorResult> batch) { emit tensorsCompared(job, batch); });
    DiffCallbacks callbacks;
    callbacks.progress = [this, job, cancel, lastPermille](double total, std::string_view what) {
        const int permille = static_cast<int>(total * 1000.0);
        if (lastPermille->exchange(permille) != permille) {
            emit progress(job, total,
                          QString::fromUtf8(what.data(), static_cast<qsizetype>(what.size())));
        }
        return !cancel->load();
    };
    callbacks.onTensor = [&batcher](const TensorResult& t) { batcher.add(t); };
    bool fatal = false;
    callbacks.onOpened = [this, job, &fatal, treeShown](const Manifest* ref, const Manifest* cand,
                                                        const Diagnostics& problems) {
        if ((ref || cand) && !treeShown) {
            // A side that cannot be opened is shown as such (world size 0), never described
            // with the other side's metadata.
            Manifest unopened;
            unopened.worldSize = 0;
            emit metadataReady(job, ref ? *ref : unopened, cand ? *cand : unopened);
        }
        // Only a bundle that cannot be opened at all stops the comparison.
        fatal = !ref || !cand;
        if (!problems.empty() || fatal) {
            emit problemsFound(job, problems, fatal);
        }
    };
    emit progress(job, 0.0, tr("Opening %1").arg(reference));
    auto result = std::make_shared<DiffResult>(
        diffBundleDirs(std::filesystem::path(reference.toStdString()),
                       std::filesystem::path(candidate.toStdString()), options, callbacks));
    batcher.finish();
    if (cancel->load() || result->cancelled) {
        emit cancelled(job);
        return;
    }
    if (fatal) {
        return; // reported when opened; the controller has stopped this job
    }
    emit progress(job, 1.0, tr("Done"));
    emit finished(job, std::shared_ptr<const DiffResult>(std::move(result)));
}

} // namespace ttrace::ui
