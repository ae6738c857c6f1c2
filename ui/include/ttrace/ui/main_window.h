#pragma once
// The explorer's main window: composes the panes (summary bar, problems banner, layer tree,
// drill-down), owns the menus and the loading controller, and handles opening (dialogs, recent
// files, drag and drop) and export. The logic lives in the panes and models.
#include "ttrace/compare/diff_result.h"
#include "ttrace/report/report_open.h"
#include "ttrace/ui/models/export_file.h"
#include "ttrace/ui/models/markdown_report.h"
#include "ttrace/ui/models/recent_bundles.h"

#include <QImage>
#include <QMainWindow>
#include <QString>

#include <memory>
#include <vector>

class QAction;
class QDockWidget;
class QLabel;
class QMenu;

namespace ttrace::ui {

class DrillDownPane;
class ElementView;
class ExportController;
struct ExportOutcome;
class HeadlineBar;
class LayerTreeModel;
class LayerTreePane;
class LoadController;
class ReportLoader;
class LocalizeUi;
class PhaseTimeline;
class ProgressCancelWidget;
class SelectionNavigator;
class ProblemsBanner;
class RunSummaryBar;
class StartupLocalize;
class WarningsDock;
class WarningsModel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Starts loading both bundles on the worker thread; problems are shown in the window.
    void openBundles(const QString& reference, const QString& candidate);
    // Opens a finished comparison without its bundles: the JSON `ttrace diff --json` or
    // `ttrace-mpi diff --json` wrote (or a summary cache entry), checked against the cache
    // entry `cache` when one is given. Everything but element-level drill-down is shown;
    // loadingFinished and storyReady follow as for bundles.
    void openReport(const QString& report, const QString& cache = {});
    // The report shown, when the window shows one opened without its bundles.
    [[nodiscard]] const QString& reportFile() const { return report_; }
    [[nodiscard]] bool isLoading() const;

    [[nodiscard]] LayerTreeModel* model() const { return model_; }
    [[nodiscard]] LayerTreePane* treePane() const { return tree_; }
    [[nodiscard]] DrillDownPane* drillDownPane() const { return drill_; }
    [[nodiscard]] ProblemsBanner* problemsBanner() const { return problems_; }
    [[nodiscard]] RunSummaryBar* summaryBar() const { return summary_; }
    [[nodiscard]] QAction* localizeAction() const;
    [[nodiscard]] HeadlineBar* headlineBar() const { return headline_; }
    [[nodiscard]] WarningsModel* warningsModel() const { return warnings_; }
    [[nodiscard]] WarningsDock* warningsDock() const { return warningsDock_; }
    [[nodiscard]] LocalizeUi* localizeUi() const { return localizeUi_; }
    [[nodiscard]] PhaseTimeline* phaseTimeline() const { return timeline_; }
    [[nodiscard]] SelectionNavigator* navigator() const { return navigator_; }
    [[nodiscard]] ElementView* elementView() const { return elements_; }
    [[nodiscard]] QDockWidget* elementsDock() const { return elementsDock_; }
    // Selects a tensor of the shown result: its iteration in the step filter, its module's cell
    // in the column of its kind. False when there is no such tensor or module.
    bool selectTensor(std::size_t tensor);

    // After the next comparison finishes, localize `what` (a module name, or "all" for the walk
    // from the first divergence) once the agent is connected; storyReady follows its end.
    void setStartupLocalize(const QString& what);
    // The window as a picture (headline, tree with verdicts, drill-down), plots rendered first.
    [[nodiscard]] QImage screenshot();
    [[nodiscard]] QAction* cancelAction() const { return cancel_; }
    // Opens the shown pair again with reference and candidate exchanged.
    [[nodiscard]] QAction* swapAction() const { return swap_; }

    // Markdown report of the current view (step filter, selection, problems).
    [[nodiscard]] QString markdownReport() const;
    // Renders `widget` (the whole window when null) to a PNG after replotting, here and now.
    bool exportPng(const QString& path, QWidget* widget = nullptr, QString* error = nullptr);
    // What an export of this window writes. The picture and the view are taken now, on the GUI
    // thread; the encoding, rendering and writing are left to the export runner.
    [[nodiscard]] ExportFile pngExportOf(const QString& path, QWidget* widget = nullptr);
    [[nodiscard]] ExportFile markdownExport(const QString& path) const;
    // The final result as `ttrace diff --json` writes it; null bytes-maker while comparing.
    [[nodiscard]] ExportFile jsonExport(const QString& path) const;
    // Runs the window's exports off the GUI thread, with the status bar's export progress.
    [[nodiscard]] ExportController* exports() const { return exports_; }
    [[nodiscard]] ProgressCancelWidget* exportProgress() const { return exportProgress_; }
    // Starts `files` on the export runner; `interactive` says a failure in a message box.
    void startExport(std::vector<ExportFile> files, bool interactive);

signals:
    // Loading ended (finished, failed or cancelled); `ok` is false when a bundle is broken.
    void loadingFinished(bool ok);
    // The comparison ended and the startup localize (if any) has ended too: the window tells
    // its whole story now (screenshots wait for this). `ok` as for loadingFinished.
    void storyReady(bool ok);
    // A cached comparison is shown, found from the bundles' file stamps and not yet checked
    // against their bytes (loadingFinished follows the check).
    void provisionalShown();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createPanes();
    void createMenus();
    void connectLoader();
    QAction* addOpenActions(QMenu* file);
    // The export and copy entries; returns the window's PNG export (also on the toolbar).
    QAction* addExportActions(QMenu* file);
    void createViewMenu();
    QAction* createModuleMenu();
    void createHelpMenu();
    void createToolBar(QAction* open, QAction* exportWindow, QAction* remote);
    void createStatusBar();
    void chooseAndOpen();
    void chooseAndOpenReport();
    void startReportOpen(const QString& report, const QString& cache);
    void onReportOpened(const std::shared_ptr<const ttrace::OpenedReport>& opened);
    void onReportFailed(const QString& message);
    void rebuildRecentMenu();
    void exportPngInteractive(QWidget* widget, const QString& what);
    void exportMarkdownInteractive();
    void exportJsonInteractive();
    void createExports();
    void onExportFinished(const ExportOutcome& outcome);
    // The path the user chose for an export of `what`, or empty.
    [[nodiscard]] MarkdownSnapshot markdownExportSnapshot() const;
    QString chooseExportPath(const QString& what, const QString& suffix, const QString& filter);
    void onLoadStarted();
    void onMetadata(const ttrace::Manifest& reference, const ttrace::Manifest& candidate);
    void onProblems(const ttrace::Diagnostics& problems, bool fatal);
    void onProvisional(const std::shared_ptr<const ttrace::DiffResult>& result);
    void onCacheStale();
    void onFinished(const std::shared_ptr<const ttrace::DiffResult>& result);
    // Fills the tree, warnings and story from a result (provisional or final).
    void showResult(const std::shared_ptr<const ttrace::DiffResult>& result);
    // Drops a provisional result the check did not confirm; the tree keeps its rows.
    void dropProvisional();
    void onStopped(const QString& why);
    void onCurrentTensorChanged(std::optional<std::size_t> tensor);
    void updateVerdict();
    void showStory(const ttrace::DiffResult& result);
    // A pair the engine refused (or could not open): the CLI's words in banner, headline and
    // pill, with the fix offered where there is one.
    void showRefusal(const ttrace::DiffResult& result);

    LayerTreeModel* model_;
    LoadController* loader_;
    RunSummaryBar* summary_;
    ProblemsBanner* problems_;
    LayerTreePane* tree_;
    DrillDownPane* drill_;
    ProgressCancelWidget* progress_ = nullptr; // loading's bar and Cancel
    QLabel* progressText_ = nullptr;           // the status line: what loading does, how it ended
    QAction* cancel_ = nullptr;
    QAction* swap_ = nullptr;
    ExportController* exports_ = nullptr;
    ProgressCancelWidget* exportProgress_ = nullptr; // the running export's bar and Cancel
    bool exportInteractive_ = false;                 // the running export came from a menu
    HeadlineBar* headline_;
    WarningsModel* warnings_;
    WarningsDock* warningsDock_;
    LocalizeUi* localizeUi_ = nullptr;
    PhaseTimeline* timeline_;
    SelectionNavigator* navigator_;
    ElementView* elements_;
    QDockWidget* elementsDock_;
    StartupLocalize* startup_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    RecentBundles recent_;
    QString reference_;
    QString candidate_;
    QString pendingDrop_; // a reference dropped alone, waiting for its candidate
    ReportLoader* reportLoader_ = nullptr;
    QString report_; // the report shown (or being opened) without bundles; empty for bundles
    ttrace::Diagnostics shownProblems_;
    // The cached result on screen while its content check runs; null once checked or dropped.
    std::shared_ptr<const ttrace::DiffResult> provisional_;
};

} // namespace ttrace::ui
