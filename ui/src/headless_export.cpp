#include "ttrace/ui/headless_export.h"

#include "ttrace/compare/verdict.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/export_controller.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/problems_banner.h"

#include <QFileInfo>
#include <QTimer>

#include <cstdio>

namespace ttrace::ui {
namespace {

void printLine(FILE* stream, const QString& text) {
    std::fputs(qPrintable(text + '\n'), stream);
    std::fflush(stream);
}

// The errors behind an "invalid" verdict: bundle diagnostics, then tensors' findings.
void printProblems(const DiffResult& result) {
    for (const auto& d : result.diagnostics) {
        if (d.severity == Severity::Error) {
            printLine(stderr, QString::fromStdString(d.toString()));
        }
    }
    for (const auto& t : result.tensors) {
        for (const auto& f : t.findings) {
            if (f.severity == Severity::Error) {
                printLine(stderr, QString::fromStdString(f.toString()));
            }
        }
    }
}

} // namespace

HeadlessExport::HeadlessExport(MainWindow* window, QString screenshot, QString markdown,
                               QObject* parent)
    : QObject(parent)
    , window_(window)
    , screenshot_(std::move(screenshot))
    , markdown_(std::move(markdown)) {
    // The story includes a localize run asked for on the command line: wait for its end.
    connect(window_, &MainWindow::storyReady, this, &HeadlessExport::onLoadingFinished);
}

void HeadlessExport::onLoadingFinished(bool ok) {
    // Let the selection, layouts and plots settle before rendering.
    QTimer::singleShot(0, this, [this, ok] {
        // The same verdict and exit status as `ttrace diff` (exitCodeFor); no result at all
        // (a bundle that cannot be opened) and a localize asked for that could not run are
        // errors, 2, as `ttrace localize` says them.
        const DiffResult* result = window_->model()->results().final();
        exitCode_ = ok && result ? exitCodeFor(*result) : exitStatus(ExitCode::BadInput);
        if (!ok) {
            QString text = window_->problemsBanner()->text().trimmed();
            if (text.isEmpty()) {
                text = window_->headlineBar()->conclusion(); // a localize that failed
            }
            printLine(stderr, text.isEmpty() ? tr("loading did not finish") : text);
        }
        if (ok && result && exitCode_ == exitStatus(ExitCode::BadInput)) {
            // Invalid input that still let the comparison run: say why, on stderr, in the
            // same words as `ttrace diff` (the engine's diagnostics and invalid tensors).
            printProblems(*result);
        }
        std::vector<ExportFile> files;
        if (!screenshot_.isEmpty()) {
            files.push_back(window_->pngExportOf(screenshot_));
        }
        if (!markdown_.isEmpty()) {
            files.push_back(window_->markdownExport(markdown_));
        }
        if (files.empty()) {
            finish(ExportOutcome{});
            return;
        }
        // Written on the export runner, as the menu's exports are; the verdict line follows.
        connect(window_->exports(), &ExportController::finished, this, &HeadlessExport::finish,
                Qt::SingleShotConnection);
        window_->startExport(std::move(files), false);
    });
}

void HeadlessExport::finish(const ExportOutcome& outcome) {
    for (const auto& path : outcome.saved) {
        printLine(stdout, QFileInfo(path).absoluteFilePath());
    }
    for (const auto& error : outcome.errors) {
        printLine(stderr, error);
    }
    if (!outcome.ok()) {
        exitCode_ = exitStatus(ExitCode::BadInput);
    }
    if (const DiffResult* result = window_->model()->results().final()) {
        printLine(stdout, QString::fromUtf8(runVerdictName(runVerdict(*result))));
    }
    done_ = true;
    emit finished(exitCode_);
}

} // namespace ttrace::ui
