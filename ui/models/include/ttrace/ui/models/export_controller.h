#pragma once
// Runs the explorer's exports (PNG screenshots, Markdown and JSON reports) off the GUI thread on
// its JobRunner's thread: each file's bytes are made (encoded, rendered) and written there, and
// progress and the outcome come back as signals on the GUI thread. A new export supersedes one
// still running; the runner drops whatever the superseded one still reports.
#include "ttrace/ui/models/export_file.h"
#include "ttrace/ui/models/job_runner.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <vector>

namespace ttrace::ui {

struct ExportOutcome {
    QStringList saved;  // the files written, in the order asked
    QStringList errors; // one per file that could not be written: "PATH: why"
    bool cancelled = false;
    [[nodiscard]] bool ok() const { return errors.isEmpty() && !cancelled; }
};

class ExportController : public QObject {
    Q_OBJECT
public:
    explicit ExportController(QObject* parent = nullptr);

    // Writes `files` in order; a file that fails does not stop the next.
    void start(std::vector<ExportFile> files);
    // Stops before the next file; the outcome says `cancelled`.
    void cancel();
    [[nodiscard]] bool isRunning() const { return runner_.isRunning(); }

signals:
    void started(int steps, const QString& firstFile); // two steps a file: made, written
    void progress(int done);
    void finished(const ttrace::ui::ExportOutcome& outcome);

private:
    JobRunner runner_{QStringLiteral("ttrace-export")};
};

} // namespace ttrace::ui
