// MainWindow's exports: PNG screenshots, the Markdown report and the JSON report. What only the
// GUI thread can take (a widget's picture, the view's report sections) is taken when the export
// is asked for; encoding, rendering and writing run on the export runner, shown by the status
// bar's export progress and Cancel.
#include "ttrace/compare/report_json.h"
#include "ttrace/io/diagnostic.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/export_controller.h"
#include "ttrace/ui/models/export_path.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/markdown_report.h"
#include "ttrace/ui/models/warnings_model.h"
#include "ttrace/ui/problems_banner.h"
#include "ttrace/ui/progress_cancel_widget.h"
#include "ttrace/ui/widget_png.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QProgressBar>
#include <QStatusBar>
#include <QStyle>

namespace ttrace::ui {

void MainWindow::createExports() {
    exports_ = new ExportController(this);
    auto* cancel = new QAction(tr("Cancel Export"), this);
    connect(cancel, &QAction::triggered, exports_, &ExportController::cancel);
    exportProgress_ = new ProgressCancelWidget(cancel, tr("Cancel Export"), this);
    exportProgress_->setObjectName(QStringLiteral("exportProgress"));
    exportProgress_->bar()->setMaximumWidth(160);
    exportProgress_->bar()->setTextVisible(false);
    statusBar()->addPermanentWidget(exportProgress_);
    connect(exports_, &ExportController::started, this, [this](int steps, const QString& first) {
        exportProgress_->begin(steps);
        exportProgress_->setText(tr("Saving %1…").arg(QFileInfo(first).fileName()));
    });
    connect(exports_, &ExportController::progress, exportProgress_,
            &ProgressCancelWidget::setValue);
    connect(exports_, &ExportController::finished, this, &MainWindow::onExportFinished);
}

QAction* MainWindow::addExportActions(QMenu* file) {
    auto* exportWindow = file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton),
                                         tr("Export &Window as PNG..."),
                                         QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), this,
                                         [this] { exportPngInteractive(this, tr("window")); });
    exportWindow->setToolTip(tr("Save a screenshot of the window for a bug report"));
    file->addAction(tr("Export &Layer Tree as PNG..."), this,
                    [this] { exportPngInteractive(tree_, tr("layer tree")); });
    file->addAction(tr("Export &Drill-down as PNG..."), this,
                    [this] { exportPngInteractive(drill_, tr("drill-down")); });
    file->addAction(tr("Export &Markdown Report..."), QKeySequence(Qt::CTRL | Qt::Key_E), this,
                    &MainWindow::exportMarkdownInteractive);
    file->addAction(tr("Export &JSON Report..."), this, &MainWindow::exportJsonInteractive)
        ->setToolTip(tr("The comparison as `ttrace diff --json` writes it"));
    auto* copyShot = file->addAction(tr("Copy &Screenshot"),
                                     QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_C), this, [this] {
                                         QApplication::clipboard()->setImage(screenshot());
                                         statusBar()->showMessage(tr("Screenshot copied"), 3000);
                                     });
    copyShot->setObjectName(QStringLiteral("copyScreenshotAction"));
    file->addAction(tr("&Copy Markdown Report"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
                    this, [this] { QApplication::clipboard()->setText(markdownReport()); });
    return exportWindow;
}

void MainWindow::startExport(std::vector<ExportFile> files, bool interactive) {
    exportInteractive_ = interactive;
    exports_->start(std::move(files));
}

void MainWindow::onExportFinished(const ExportOutcome& outcome) {
    exportProgress_->end();
    if (!outcome.errors.isEmpty()) {
        statusBar()->showMessage(outcome.errors.join(QStringLiteral("; ")), 10000);
        if (exportInteractive_) {
            QMessageBox::warning(this, tr("Export failed"), outcome.errors.join('\n'));
        }
    } else if (outcome.cancelled) {
        statusBar()->showMessage(tr("Export cancelled"), 5000);
    } else if (!outcome.saved.isEmpty()) {
        QStringList shown;
        for (const auto& path : outcome.saved) {
            shown << QDir::toNativeSeparators(path);
        }
        statusBar()->showMessage(tr("Saved %1").arg(shown.join(QStringLiteral(", "))), 5000);
    }
}

QString MainWindow::markdownReport() const {
    return renderMarkdown(markdownExportSnapshot());
}

MarkdownSnapshot MainWindow::markdownExportSnapshot() const {
    ReportView view;
    view.reference = reference_;
    view.candidate = candidate_;
    view.selectedTensor = drill_->currentTensor();
    view.problems = problems_->lines();
    for (const auto& g : warnings_->groups()) {
        if (g.severity == Severity::Warning) {
            view.problems << tr("warning: %1 · %2 · %3 finding(s)")
                                 .arg(QString::fromStdString(std::string(g.code.name())),
                                      g.module.empty() ? tr("bundle")
                                                       : QString::fromStdString(g.module))
                                 .arg(g.items.size());
        }
    }
    return markdownSnapshot(*model_, view);
}

ExportFile MainWindow::markdownExport(const QString& path) const {
    return textExport(path, [snapshot = markdownExportSnapshot()] {
        return renderMarkdown(snapshot); // the engine's report of the whole run, off the GUI
    });
}

ExportFile MainWindow::jsonExport(const QString& path) const {
    return {path, [result = model_->results().finalShared()](QString& error) {
                if (!result) {
                    error = tr("the comparison has not finished: no report to write yet");
                    return QByteArray();
                }
                return QByteArray::fromStdString(diffResultToJson(*result));
            }};
}

ExportFile MainWindow::pngExportOf(const QString& path, QWidget* widget) {
    drill_->replotNow();
    return pngExport(path, renderWidget(widget ? widget : this)); // the grab: GUI thread only
}

bool MainWindow::exportPng(const QString& path, QWidget* widget, QString* error) {
    const auto failed = runExportFile(pngExportOf(path, widget));
    if (failed && error) {
        *error = *failed;
    }
    return !failed;
}

QString MainWindow::chooseExportPath(const QString& what, const QString& suffix,
                                     const QString& filter) {
    return QFileDialog::getSaveFileName(
        this, tr("Export %1").arg(what),
        defaultExportPath(candidate_, what, suffix, QDateTime::currentDateTime()), filter);
}

void MainWindow::exportPngInteractive(QWidget* widget, const QString& what) {
    const auto path = chooseExportPath(what, QStringLiteral("png"), tr("PNG images (*.png)"));
    if (!path.isEmpty()) {
        startExport({pngExportOf(path, widget)}, true);
    }
}

void MainWindow::exportMarkdownInteractive() {
    const auto path = chooseExportPath(tr("report"), QStringLiteral("md"), tr("Markdown (*.md)"));
    if (!path.isEmpty()) {
        startExport({markdownExport(path)}, true);
    }
}

void MainWindow::exportJsonInteractive() {
    const auto path = chooseExportPath(tr("report"), QStringLiteral("json"), tr("JSON (*.json)"));
    if (!path.isEmpty()) {
        startExport({jsonExport(path)}, true);
    }
}

} // namespace ttrace::ui
