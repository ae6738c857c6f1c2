#pragma once
// Opens a diff report without its bundles (ttrace/report/report_open.h) off the GUI thread, one job
// at a time: a report of a big pair is hundreds of megabytes of JSON. The result or the failure
// comes back as a queued signal; what a superseded job still reports is dropped.
#include "ttrace/report/report_open.h"

#include <QObject>
#include <QString>

#include <memory>
#include <thread>

namespace ttrace::ui {

class ReportLoader : public QObject {
    Q_OBJECT
public:
    explicit ReportLoader(QObject* parent = nullptr);
    ~ReportLoader() override; // waits for a running job's thread

    // Reads `report` and, when not empty, the summary cache entry `cache` that must match it.
    void start(const QString& report, const QString& cache = {});
    [[nodiscard]] bool isRunning() const { return running_; }

signals:
    void finished(const std::shared_ptr<const ttrace::OpenedReport>& report);
    // The core's sentence, naming the file at fault.
    void failed(const QString& message);

private:
    void join();

    std::thread thread_;
    quint64 job_ = 0;
    bool running_ = false;
};

} // namespace ttrace::ui
