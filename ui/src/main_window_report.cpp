// MainWindow's report-only open: a comparison made elsewhere (`ttrace diff --json`, or
// `ttrace-mpi diff` on the cluster where the bundles live) shown without its bundles. The same
// views as for bundles are filled from the report; what needs the bundles' elements (the
// element view, localize) says why it is unavailable.
#include "ttrace/io/verdict_notes.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/element_view.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/load_controller.h"
#include "ttrace/ui/localize_ui.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/report_loader.h"
#include "ttrace/ui/models/report_modules.h"
#include "ttrace/ui/problems_banner.h"
#include "ttrace/ui/progress_cancel_widget.h"
#include "ttrace/ui/run_summary_bar.h"
#include "ttrace/ui/startup_localize.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QStatusBar>
#include <QTreeView>

namespace ttrace::ui {

void MainWindow::chooseAndOpenReport() {
    const auto path = QFileDialog::getOpenFileName(
        this, tr("Open a diff report"),
        report_.isEmpty() ? QString() : QFileInfo(report_).absolutePath(),
        tr("Diff reports (*.json);;All files (*)"));
    if (!path.isEmpty()) {
        openReport(path);
    }
}

void MainWindow::openReport(const QString& report, const QString& cache) {
    report_ = QFileInfo(report).absoluteFilePath();
    const QString cacheFile = cache.isEmpty() ? QString() : QFileInfo(cache).absoluteFilePath();
    if (loader_->isRunning()) {
        // The comparison on screen ends first (cancelled), so its end never lands on the report.
        connect(
            this, &MainWindow::loadingFinished, this,
            [this, report = report_, cacheFile] {
                if (report_ == report) {
                    startReportOpen(report, cacheFile);
                }
            },
            Qt::SingleShotConnection);
        loader_->cancel();
        return;
    }
    startReportOpen(report_, cacheFile);
}

void MainWindow::startReportOpen(const QString& report, const QString& cache) {
    if (!reportLoader_) {
        reportLoader_ = new ReportLoader(this);
        connect(reportLoader_, &ReportLoader::finished, this, &MainWindow::onReportOpened);
        connect(reportLoader_, &ReportLoader::failed, this, &MainWindow::onReportFailed);
    }
    reference_.clear();
    candidate_.clear();
    onLoadStarted(); // empties every view, as a new pair of bundles does
    elements_->setUnavailable(QString::fromUtf8(kReportOnlyReason.data(),
                                                static_cast<qsizetype>(kReportOnlyReason.size())));
    localizeUi_->setBundles({}, {}); // nothing to replay without the bundles
    swap_->setEnabled(false);
    progress_->begin(0);        // busy: one file's read has no steps to count
    cancel_->setEnabled(false); // ... and nothing to cancel midway
    progressText_->setText(tr("Reading the report %1…").arg(report));
    setWindowTitle(tr("%1 (report) — TTrace Explorer").arg(QFileInfo(report).fileName()));
    reportLoader_->start(report, cache);
}

void MainWindow::onReportOpened(const std::shared_ptr<const OpenedReport>& opened) {
    if (report_ != QString::fromStdString(opened->report.string())) {
        return; // bundles or another report were opened meanwhile
    }
    // Shares the opened report's lifetime: the views hold the result, the report owns it.
    const std::shared_ptr<const DiffResult> result(opened, &opened->result);
    reference_ = QString::fromStdString(result->summary.referenceDir);
    candidate_ = QString::fromStdString(result->summary.candidateDir);
    summary_->setBundles(reference_, candidate_);
    summary_->setReportSides(result->summary, report_);
    model_->setModules(modulesOfReport(*result));
    tree_->treeView()->expandToDepth(1);
    // What the bundles' open reported, shown as a verified cached comparison shows it.
    if (const auto problems = openingProblems(result->diagnostics); !problems.empty()) {
        onProblems(problems, false);
    }
    showResult(result);
    updateVerdict();
    progress_->end();
    statusBar()->showMessage(tr("Opened from a report: element-level drill-down and localize "
                                "need the bundles."));
    progressText_->setText(
        tr("%1 tensors, from the report %2%3.")
            .arg(result->tensors.size())
            .arg(QFileInfo(report_).fileName(),
                 opened->cache.empty() ? QString() : tr(" (matches its cache entry)")));
    const bool ok = !hasErrors(shownProblems_);
    emit loadingFinished(ok);
    startup_->onLoaded(ok);
}

void MainWindow::onReportFailed(const QString& message) {
    progress_->end();
    progressText_->setText(tr("Report not opened"));
    problems_->setProblems(message, {});
    headline_->setRefused(message);
    summary_->setFailed(tr("Report not opened"));
    emit loadingFinished(false);
    startup_->onLoaded(false);
}

} // namespace ttrace::ui
