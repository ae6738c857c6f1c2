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

ElementInspector::~ElementInspector() {
    cancel();
    join(); // the job posts to this object only through queued calls, dropped with it
}

void ElementInspector::join() {
    if (thread_.joinable()) {
        thread_.join();
    }
}

void ElementInspector::cancel() {
    if (cancel_) {
        cancel_->store(true);
    }
}

void ElementInspector::start(const QString& reference, const QString& candidate,
                             ElementQuery query) {
    cancel();
    join(); // a cancelled job returns at its next progress report
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    const quint64 job = ++job_;
    running_ = true;
    emit started();
    auto post = [this, job](auto f) {
        QMetaObject::invokeMethod(
            this,
            [this, job, f = std::move(f)] {
                if (job == job_) {
                    f();
                }
            },
            Qt::QueuedConnection);
    };
    thread_ = std::thread([post, pair = pair_, cancel = cancel_, reference, candidate,
                           query = std::move(query), this] {
        const ProgressFn onProgress = [&](double f, std::string_view) {
            post([this, f] { emit progress(f); });
            return !cancel->load();
        };
        ElementReport report;
        {
            std::lock_guard lock(pair->mutex);
            pair->open(reference, candidate);
            if (pair->reference && pair->candidate) {
                report = inspectElements(*pair->reference, *pair->candidate, query, onProgress);
            } else {
                report.id = query.id;
                report.problems = pair->problems;
            }
        }
        report.cancelled = report.cancelled || cancel->load();
        post([this, report = std::move(report)] {
            running_ = false;
            emit finished(report);
        });
    });
}

} // namespace ttrace::ui
