#pragma once
// Command-line export (`--screenshot FILE`, `--markdown FILE`): waits until the window has
// finished loading, writes the files, prints their paths and ends the event loop with an exit
// code: 0 written, 2 a bundle is broken (the problems go to stderr; the files are still written,
// showing them), 1 a file could not be written or loading was cancelled.
#include <QObject>
#include <QString>

namespace ttrace::ui {

class MainWindow;

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

    MainWindow* window_;
    QString screenshot_;
    QString markdown_;
    int exitCode_ = 0;
    bool done_ = false;
};

} // namespace ttrace::ui
