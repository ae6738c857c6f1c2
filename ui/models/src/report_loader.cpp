#include "ttrace/ui/models/report_loader.h"

namespace ttrace::ui {

ReportLoader::ReportLoader(QObject* parent)
    : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const OpenedReport>>(
        "std::shared_ptr<const ttrace::OpenedReport>");
}

ReportLoader::~ReportLoader() {
    join(); // the job posts to this object only through queued calls, dropped with it
}

void ReportLoader::join() {
    if (thread_.joinable()) {
        thread_.join();
    }
}

void ReportLoader::start(const QString& report, const QString& cache) {
    // Reading cannot be interrupted midway; a newer job waits for the older one to end and
    // the older one's answer is dropped (job number).
    join();
    const quint64 job = ++job_;
    running_ = true;
    thread_ = std::thread([this, job, report = report.toStdString(), cache = cache.toStdString()] {
        auto outcome = openDiffReport(report, cache);
        std::shared_ptr<const OpenedReport> opened;
        QString message;
        if (outcome.opened) {
            opened = std::make_shared<const OpenedReport>(std::move(*outcome.opened));
        } else {
            message = QString::fromStdString(outcome.failure->message());
        }
        QMetaObject::invokeMethod(
            this,
            [this, job, opened, message] {
                if (job != job_) {
                    return;
                }
                running_ = false;
                if (opened) {
                    emit finished(opened);
                } else {
                    emit failed(message);
                }
            },
            Qt::QueuedConnection);
    });
}

} // namespace ttrace::ui
