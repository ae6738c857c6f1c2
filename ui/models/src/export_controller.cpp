#include "ttrace/ui/models/export_controller.h"

#include <memory>
#include <utility>

namespace ttrace::ui {

ExportController::ExportController(QObject* parent)
    : QObject(parent) {}

void ExportController::start(std::vector<ExportFile> files) {
    const int steps = static_cast<int>(2 * files.size());
    const QString first = files.empty() ? QString() : files.front().path;
    auto shared = std::make_shared<const std::vector<ExportFile>>(std::move(files));
    runner_.start([this, shared](const JobContext& job) {
        ExportOutcome outcome;
        int done = 0;
        for (const auto& file : *shared) {
            if (job.cancelled()) {
                outcome.cancelled = true;
                break;
            }
            QString error;
            const QByteArray bytes = file.bytes(error);
            job.post([this, step = ++done] { emit progress(step); });
            const auto failed = error.isEmpty() ? writeExportFile(file.path, bytes)
                                                : QStringLiteral("%1: %2").arg(file.path, error);
            job.post([this, step = ++done] { emit progress(step); });
            if (failed) {
                outcome.errors << *failed;
            } else {
                outcome.saved << file.path;
            }
        }
        job.post([this, outcome] {
            runner_.end();
            emit finished(outcome);
        });
    });
    emit started(steps, first);
}

void ExportController::cancel() {
    runner_.cancel();
}

} // namespace ttrace::ui
