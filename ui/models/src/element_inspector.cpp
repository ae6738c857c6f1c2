#include "ttrace/ui/models/element_inspector.h"

#include <mutex>

namespace ttrace::ui {

struct ElementInspector::OpenPair {
    std::mutex mutex; // a job opens or reads it on its worker thread
    QString referenceDir;
    QString candidateDir;
    std::shared_ptr<const Bundle> reference;
    std::shared_ptr<const Bundle> candidate;
    Diagnostics problems;

    // Opens the pair unless it is the one already open.
    void open(const QString& ref, const QString& cand) {
        if (ref == referenceDir && cand == candidateDir && reference && candidate) {
            return;
        }
        referenceDir = ref;
        candidateDir = cand;
        problems.clear();
        auto r = openBundle(ref.toStdString());
        auto c = openBundle(cand.toStdString());
        reference = r.bundle;
        candidate = c.bundle;
        for (auto* side : {&r, &c}) {
            if (!side->bundle) {
                problems.insert(problems.end(), side->diagnostics.begin(), side->diagnostics.end());
            }
        }
    }
};

ElementInspector::ElementInspector(QObject* parent)
    : QObject(parent)
    , pair_(std::make_shared<OpenPair>()) {
    qRegisterMetaType<ElementReport>("ttrace::ElementReport");
}

ElementInspector::~ElementInspector() = default; // the runner cancels and waits

void ElementInspector::cancel() {
    runner_.cancel();
}

void ElementInspector::start(const QString& reference, const QString& candidate,
                             ElementQuery query) {
    // The runner cancels the job still running; this one runs once it has returned.
    runner_.start([this, reference, candidate, query = std::move(query)](const JobContext& job) {
        run(job, reference, candidate, query);
    });
    emit started();
}

void ElementInspector::run(const JobContext& job, const QString& reference,
                           const QString& candidate, const ElementQuery& query) {
    const ProgressFn onProgress = job.token().progress(
        [this, &job](double f, std::string_view) { job.post([this, f] { emit progress(f); }); });
    ElementReport report;
    {
        std::lock_guard lock(pair_->mutex);
        pair_->open(reference, candidate);
        if (pair_->reference && pair_->candidate) {
            report = inspectElements(*pair_->reference, *pair_->candidate, query, onProgress);
        } else {
            report.id = query.id;
            report.problems = pair_->problems;
        }
    }
    report.cancelled = report.cancelled || job.cancelled();
    job.post([this, report = std::move(report)] {
        runner_.end();
        emit finished(report);
    });
}

} // namespace ttrace::ui
