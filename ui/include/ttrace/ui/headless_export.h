#pragma once
// Command-line export (`--screenshot FILE`, `--markdown FILE`): waits until the window has
// finished loading, writes the files, prints their paths and the verdict (clean / divergent /
// invalid), and ends the event loop with the exit code of `ttrace diff` (ttrace::exitCodeFor):
// 0 clean, 1 divergent, 2 invalid (a broken bundle, invalid or missing tensors; the problems go
// to stderr and the files are still written, showing them) or a file that cannot be written.
#include <QObject>
#include <QString>

namespace ttrace::ui {

class MainWindow;
struct ExportOutcome;

class HeadlessExport : public QObject {
    Q_OBJECT
public:
    HeadlessExport(MainWindow* window, QString screenshot, QString markdown,
                   QObject* parent = nullptr);

    [[nodiscard]] int exitCode() const { return exitCode_; }
    [[nodiscard]] bool done() const { return done_; }

signals:
    void finished(int exitCode);

private:
    void onLoadingFinished(bool ok);
    // The files are written: their paths (or why not), then the verdict.
    void finish(const ExportOutcome& outcome);

    MainWindow* window_;
    QString screenshot_;
    QString markdown_;
    int exitCode_ = 0;
    bool done_ = false;
};

} // namespace ttrace::ui
