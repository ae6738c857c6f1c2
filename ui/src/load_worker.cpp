#include "ttrace/ui/load_worker.h"

#include "ttrace/bundle.h"

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
    // Progress of the three phases mapped onto one bar: each open 10 %, the diff the rest.
    // Throttled to whole permille steps: the engine reports once per tensor.
    auto lastPermille = std::make_shared<std::atomic<int>>(-1);
    const auto phase = [this, job, cancel, lastPermille](double start, double width) {
        return [this, job, cancel, lastPermille, start, width](double fraction,
                                                               std::string_view what) {
            const double total = start + width * fraction;
            const int permille = static_cast<int>(total * 1000.0);
            if (lastPermille->exchange(permille) != permille) {
                emit progress(job, total,
                              QString::fromUtf8(what.data(), static_cast<qsizetype>(what.size())));
            }
            return !cancel->load();
        };
    };
    const auto opened = [&](const QString& dir, double start) {
        return openBundle(std::filesystem::path(dir.toStdString()), phase(start, 0.1));
    };

    emit progress(job, 0.0, tr("Opening %1").arg(reference));
    auto ref = opened(reference, 0.0);
    auto cand = opened(candidate, 0.1);
    if (cancel->load() || ref.cancelled || cand.cancelled) {
        emit cancelled(job);
        return;
    }
    Diagnostics problems = ref.diagnostics;
    problems.insert(problems.end(), cand.diagnostics.begin(), cand.diagnostics.end());
    if (ref.bundle && cand.bundle) {
        emit metadataReady(job, ref.bundle->manifest(), cand.bundle->manifest());
    } else if (ref.bundle || cand.bundle) {
        const auto& m = ref.bundle ? ref.bundle->manifest() : cand.bundle->manifest();
        emit metadataReady(job, m, m);
    }
    const bool fatal = !ref.ok() || !cand.ok();
    if (!problems.empty() || fatal) {
        emit problemsFound(job, problems, fatal);
    }
    if (fatal) {
        return;
    }

    ResultBatcher batcher(
        [this, job](std::vector<TensorResult> batch) { emit tensorsCompared(job, batch); });
    auto result = std::make_shared<DiffResult>(
        diffBundles(*ref.bundle, *cand.bundle, options, phase(0.2, 0.8),
                    [&batcher](const TensorResult& t) { batcher.add(t); }));
    batcher.finish();
    if (cancel->load() || result->cancelled) {
        emit cancelled(job);
        return;
    }
    emit progress(job, 1.0, tr("Done"));
    emit finished(job, std::shared_ptr<const DiffResult>(std::move(result)));
}

} // namespace ttrace::ui
