#include "ttrace/ui/main_window.h"

#include "ttrace/compare/verdict.h"
#include "ttrace/report/verdict_text.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/element_view.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/load_controller.h"
#include "ttrace/ui/localize_ui.h"
#include "ttrace/ui/models/agent_session.h"
#include "ttrace/ui/models/color_scale.h"
#include "ttrace/ui/models/export_path.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/markdown_report.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/story_headline.h"
#include "ttrace/ui/models/tensor_columns.h"
#include "ttrace/ui/models/warnings_model.h"
#include "ttrace/ui/open_pair_dialog.h"
#include "ttrace/ui/phase_timeline.h"
#include "ttrace/ui/problems_banner.h"
#include "ttrace/ui/progress_cancel_widget.h"
#include "ttrace/ui/remote_connect_ui.h"
#include "ttrace/ui/run_summary_bar.h"
#include "ttrace/ui/selection_navigator.h"
#include "ttrace/ui/startup_localize.h"
#include "ttrace/ui/warnings_dock.h"
#include "ttrace/ui/widget_png.h"

#include <algorithm>
#include <iterator>

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <set>

namespace ttrace::ui {
namespace {

// A dropped or chosen path names a bundle by its directory or its manifest.json.
QString bundleDir(const QString& path) {
    const QFileInfo info(path);
    if (info.isFile() && info.fileName() == QLatin1String("manifest.json")) {
        return info.absolutePath();
    }
    return info.isDir() ? info.absoluteFilePath() : QString();
}

QStringList droppedBundles(const QMimeData* mime) {
    QStringList dirs;
    if (!mime || !mime->hasUrls()) {
        return dirs;
    }
    for (const auto& url : mime->urls()) {
        if (const auto dir = bundleDir(url.toLocalFile()); !dir.isEmpty()) {
            dirs << dir;
        }
    }
    return dirs;
}

// A single dropped .json file other than a manifest: a diff report, opened without bundles.
QString droppedReport(const QMimeData* mime) {
    if (!mime || !mime->hasUrls() || mime->urls().size() != 1) {
        return {};
    }
    const QFileInfo info(mime->urls().front().toLocalFile());
    const bool report = info.isFile() && info.suffix() == QLatin1String("json") &&
                        info.fileName() != QLatin1String("manifest.json");
    return report ? info.absoluteFilePath() : QString();
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , model_(new LayerTreeModel(this))
    , loader_(new LoadController(this))
    , summary_(new RunSummaryBar(this))
    , problems_(new ProblemsBanner(this))
    , tree_(new LayerTreePane(model_, this))
    , drill_(new DrillDownPane(model_, this))
    , headline_(new HeadlineBar(this))
    , warnings_(new WarningsModel(this))
    , warningsDock_(new WarningsDock(warnings_, this))
    , timeline_(new PhaseTimeline(this))
    , navigator_(new SelectionNavigator(tree_, model_, this))
    , elements_(new ElementView(model_, this))
    , elementsDock_(new QDockWidget(tr("Elements"), this)) {
    setWindowTitle(tr("TTrace Explorer"));
    setObjectName(QStringLiteral("mainWindow"));
    setAcceptDrops(true);

    createPanes();
    connect(timeline_, &PhaseTimeline::tensorActivated, this, &MainWindow::selectTensor);

    createStatusBar();
    createExports();
    localizeUi_ = new LocalizeUi({this, model_, tree_, drill_, headline_, statusBar()}, this);
    startup_ = new StartupLocalize(localizeUi_, this);
    connect(startup_, &StartupLocalize::done, this, &MainWindow::storyReady);
    createMenus();
    connect(headline_, &HeadlineBar::activated, this, [this] {
        if (const DiffResult* r = model_->results().final()) {
            showStory(*r);
        }
    });
    connect(warningsDock_, &WarningsDock::moduleActivated, this,
            [this](const QString& module, qlonglong tensor) {
                const auto& results = model_->results();
                const auto column =
                    tensor >= 0 && static_cast<std::size_t>(tensor) < results.size()
                        ? columnOfKind(results.tensor(static_cast<std::size_t>(tensor)).id.kind)
                        : std::nullopt;
                tree_->selectModule(module, column.value_or(model_->divergentColumn(module)));
            });

    connectLoader();
    connect(tree_, &LayerTreePane::currentTensorChanged, this, &MainWindow::onCurrentTensorChanged);
    connect(model_, &LayerTreeModel::resultsChanged, this, [this] {
        if (model_->results().isFinal()) {
            updateVerdict();
        }
    });
    resize(1440, 900);
}

MainWindow::~MainWindow() = default;

// The tree beside the drill-down under the summary, headline, timeline and problems; the
// warnings and element views docked below, hidden until asked for.
void MainWindow::createPanes() {
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setObjectName(QStringLiteral("paneSplitter"));
    splitter->addWidget(tree_);
    // The drill-down scrolls instead of growing the window (a replay adds a row of plots): the
    // window fits a 1280x720 laptop screen whatever is shown.
    auto* drillScroll = new QScrollArea(this);
    drillScroll->setObjectName(QStringLiteral("drillDownScroll"));
    drillScroll->setWidget(drill_);
    drillScroll->setWidgetResizable(true);
    drillScroll->setFrameShape(QFrame::NoFrame);
    splitter->addWidget(drillScroll);
    splitter->setStretchFactor(0, 5);
    splitter->setStretchFactor(1, 4);
    splitter->setChildrenCollapsible(false);
    splitter->setSizes({860, 580});

    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(summary_);
    layout->addWidget(headline_);
    layout->addWidget(timeline_);
    auto* bannerBox = new QVBoxLayout;
    bannerBox->setContentsMargins(8, 6, 8, 0);
    bannerBox->addWidget(problems_);
    layout->addLayout(bannerBox);
    layout->addWidget(splitter, 1);
    setCentralWidget(central);
    addDockWidget(Qt::BottomDockWidgetArea, warningsDock_);
    warningsDock_->hide();
    // The element view reads tensors from the bundles: only while its dock is open.
    elementsDock_->setObjectName(QStringLiteral("elementsDock"));
    elementsDock_->setWidget(elements_);
    addDockWidget(Qt::BottomDockWidgetArea, elementsDock_);
    elementsDock_->hide();
}

// What the loader reports, shown in the tree, the status bar and the summary.
void MainWindow::connectLoader() {
    connect(loader_, &LoadController::started, this, &MainWindow::onLoadStarted);
    connect(loader_, &LoadController::progress, this, [this](double f, const QString& what) {
        progress_->setValue(static_cast<int>(f * 1000.0));
        progressText_->setText(what);
        summary_->setLoading(f);
    });
    connect(loader_, &LoadController::metadataReady, this, &MainWindow::onMetadata);
    connect(loader_, &LoadController::tensorsCompared, this,
            [this](const std::vector<TensorResult>& batch) {
                for (const auto& t : batch) {
                    model_->addTensorResult(t);
                }
            });
    connect(loader_, &LoadController::problemsFound, this, &MainWindow::onProblems);
    connect(loader_, &LoadController::provisional, this, &MainWindow::onProvisional);
    connect(loader_, &LoadController::cacheStale, this, &MainWindow::onCacheStale);
    connect(loader_, &LoadController::finished, this, &MainWindow::onFinished);
    connect(loader_, &LoadController::failed, this,
            [this] { onStopped(tr("Cannot compare: a bundle is broken")); });
    connect(loader_, &LoadController::cancelled, this, [this] { onStopped(tr("Cancelled")); });
}

void MainWindow::createMenus() {
    auto* file = menuBar()->addMenu(tr("&File"));
    QAction* open = addOpenActions(file);
    file->addSeparator();
    QAction* exportWindow = addExportActions(file);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    createViewMenu();
    QAction* remote = createModuleMenu();
    createHelpMenu();
    createToolBar(open, exportWindow, remote);
}

QAction* MainWindow::addOpenActions(QMenu* file) {
    auto* open = file->addAction(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open..."),
                                 QKeySequence::Open, this, &MainWindow::chooseAndOpen);
    open->setToolTip(tr("Open a reference bundle and a candidate bundle"));
    file->addAction(tr("Open Re&port..."), this, &MainWindow::chooseAndOpenReport)
        ->setToolTip(tr("Open the JSON report of a comparison made elsewhere, without its "
                        "bundles"));
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
    rebuildRecentMenu();
    swap_ = file->addAction(tr("S&wap Reference and Candidate"), this, [this] {
        // Copies: openBundles assigns the members its arguments would otherwise alias.
        const QString reference = candidate_;
        const QString candidate = reference_;
        if (!reference.isEmpty() && !candidate.isEmpty()) {
            openBundles(reference, candidate);
        }
    });
    swap_->setObjectName(QStringLiteral("swapBundlesAction"));
    swap_->setToolTip(tr("Open the pair again with the reference and the candidate exchanged"));
    swap_->setEnabled(false);
    return open;
}

void MainWindow::createViewMenu() {
    auto* view = menuBar()->addMenu(tr("&View"));
    view->addAction(tree_->firstDivergenceAction());
    view->addAction(tree_->previousDivergentAction());
    view->addAction(tree_->nextDivergentAction());
    view->addSeparator();
    view->addAction(tree_->divergentOnlyAction());
    view->addAction(tr("&Expand All"), tree_->treeView(), &QTreeView::expandAll);
    view->addAction(tr("&Collapse All"), tree_->treeView(), &QTreeView::collapseAll);

    view->addSeparator();
    view->addAction(warningsDock_->toggleViewAction());
    auto* elements = elementsDock_->toggleViewAction();
    elements->setObjectName(QStringLiteral("elementsViewAction"));
    elements->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    elements->setToolTip(tr("The selected tensor's worst elements and its error along a "
                            "dimension (Ctrl+Shift+E)"));
    view->addAction(elements);
    view->addSeparator();
    view->addAction(navigator_->backAction());
    view->addAction(navigator_->forwardAction());
}

// The Module menu and the tree's context menu; returns the remote connect action.
QAction* MainWindow::createModuleMenu() {
    auto* module = menuBar()->addMenu(tr("&Module"));
    module->setToolTipsVisible(true);
    module->addAction(localizeUi_->localizeAction());
    module->addAction(localizeUi_->localizeAllAction());
    module->addAction(localizeUi_->cancelAction());
    module->addSeparator();
    module->addAction(localizeUi_->connectAction());
    auto* remote = new RemoteConnectUi(localizeUi_, this);
    module->addAction(remote->action());
    module->addAction(tr("&Reconnect"), localizeUi_->session(), &AgentSession::reconnect);
    auto* tree = tree_->treeView();
    tree->setContextMenuPolicy(Qt::ActionsContextMenu);
    tree->addAction(localizeUi_->localizeAction());
    tree->addAction(localizeUi_->localizeAllAction());
    return remote->action();
}

void MainWindow::createHelpMenu() {
    auto* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About"), this, [this] {
        QMessageBox::about(
            this, tr("About TTrace Explorer"),
            tr("<b>TTrace Explorer</b><p>Finds where a distributed training run diverges from its "
               "single-device reference. Each cell shows error / tolerance of one tensor; the "
               "tolerance is derived from floating-point round-off, so a ratio above 1 is a bug."));
    });
}

void MainWindow::createToolBar(QAction* open, QAction* exportWindow, QAction* remote) {
    // Short toolbar texts: every action stays on a 1280-px-wide screen (menus keep the long ones).
    open->setIconText(tr("Open"));
    exportWindow->setIconText(tr("Export PNG"));
    auto* toolbar = addToolBar(tr("Main"));
    toolbar->setObjectName(QStringLiteral("mainToolBar"));
    toolbar->setMovable(false);
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    toolbar->addAction(open);
    toolbar->addSeparator();
    // Back and Forward as icons only, as in a browser: the toolbar stays within 1280 px.
    for (QAction* a : {navigator_->backAction(), navigator_->forwardAction()}) {
        toolbar->addAction(a);
        if (auto* button = qobject_cast<QToolButton*>(toolbar->widgetForAction(a))) {
            button->setToolButtonStyle(Qt::ToolButtonIconOnly);
        }
    }
    toolbar->addSeparator();
    toolbar->addAction(tree_->firstDivergenceAction());
    toolbar->addAction(tree_->previousDivergentAction());
    toolbar->addAction(tree_->nextDivergentAction());
    toolbar->addWidget(tree_->positionLabel());
    toolbar->addSeparator();
    toolbar->addAction(localizeUi_->connectAction());
    toolbar->addAction(remote);
    toolbar->addAction(localizeUi_->localizeAction());
    toolbar->addAction(localizeUi_->localizeAllAction());
    toolbar->addSeparator();
    toolbar->addAction(exportWindow);
}

void MainWindow::createStatusBar() {
    progressText_ = new QLabel(this);
    cancel_ = new QAction(tr("Cancel Loading"), this);
    cancel_->setShortcut(Qt::Key_Escape);
    connect(cancel_, &QAction::triggered, loader_, &LoadController::cancel);
    addAction(cancel_);
    progress_ = new ProgressCancelWidget(cancel_, tr("Cancel"), this);
    progress_->bar()->setMaximumWidth(220);
    progress_->bar()->setTextVisible(false);
    progress_->cancelButton()->setObjectName(QStringLiteral("cancelButton"));
    statusBar()->addWidget(progressText_, 1);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->showMessage(tr("Open a reference and a candidate bundle (File > Open) or drop "
                                "two bundle folders on the window."));
}

void MainWindow::chooseAndOpen() {
    OpenPairDialog dialog({reference_, candidate_}, recent_.pairs(), this);
    if (dialog.exec() == QDialog::Accepted) {
        const auto pair = dialog.pair();
        openBundles(pair.reference, pair.candidate);
    }
}

void MainWindow::rebuildRecentMenu() {
    recentMenu_->clear();
    const auto pairs = recent_.pairs();
    for (const auto& pair : pairs) {
        const auto text = QStringLiteral("%1  ↔  %2")
                              .arg(QDir::toNativeSeparators(pair.reference),
                                   QDir::toNativeSeparators(pair.candidate));
        recentMenu_->addAction(text, this,
                               [this, pair] { openBundles(pair.reference, pair.candidate); });
    }
    if (!pairs.isEmpty()) {
        recentMenu_->addSeparator();
        recentMenu_->addAction(tr("Clear Recent"), this, [this] { recent_.clear(); });
    }
    recentMenu_->setEnabled(!pairs.isEmpty());
}

void MainWindow::openBundles(const QString& reference, const QString& candidate) {
    report_.clear(); // a report still being read is not shown over these bundles
    reference_ = QFileInfo(reference).absoluteFilePath();
    candidate_ = QFileInfo(candidate).absoluteFilePath();
    setWindowTitle(tr("%1 vs %2 — TTrace Explorer")
                       .arg(QFileInfo(candidate_).fileName(), QFileInfo(reference_).fileName()));
    localizeUi_->setBundles(reference_, candidate_);
    swap_->setEnabled(true);
    loader_->start(reference_, candidate_);
}

bool MainWindow::isLoading() const {
    return loader_->isRunning();
}

void MainWindow::onLoadStarted() {
    provisional_.reset();
    model_->clear();
    timeline_->clear();
    elements_->setBundles(reference_, candidate_);
    drill_->showTensor(std::nullopt);
    problems_->clear();
    shownProblems_.clear();
    headline_->clear();
    warnings_->clear();
    warningsDock_->hide();
    summary_->setBundles(reference_, candidate_);
    summary_->setLoading(0.0);
    progress_->begin(1000);
    statusBar()->clearMessage();
    progressText_->setText(tr("Opening bundles…"));
}

void MainWindow::onMetadata(const Manifest& reference, const Manifest& candidate) {
    summary_->setManifests(reference, candidate);
    localizeUi_->setManifests(reference, candidate);
    // The tree appears now, before any statistics: reference modules, then any the candidate
    // adds (a candidate may capture modules the reference does not have).
    auto modules = reference.modules;
    std::set<std::string> known;
    for (const auto& m : modules) {
        known.insert(m.name);
    }
    for (const auto& m : candidate.modules) {
        if (known.insert(m.name).second) {
            modules.push_back(m);
        }
    }
    model_->setModules(std::move(modules));
    tree_->treeView()->expandToDepth(1);
}

void MainWindow::onProblems(const Diagnostics& problems, bool fatal) {
    shownProblems_.insert(shownProblems_.end(), problems.begin(), problems.end());
    // The headline names the first error itself: "a bundle is broken" alone says nothing.
    const auto firstError = std::find_if(problems.begin(), problems.end(), [](const Diagnostic& d) {
        return d.severity == Severity::Error;
    });
    const QString reason = firstError == problems.end()
                               ? tr("a bundle cannot be opened")
                               : QString::fromStdString(firstError->toString());
    problems_->setProblems(fatal ? tr("Cannot compare these bundles: %1").arg(reason)
                                 : tr("Problems found while opening the bundles."),
                           shownProblems_);
}

void MainWindow::onProvisional(const std::shared_ptr<const DiffResult>& result) {
    provisional_ = result;
    showResult(result);
    emit provisionalShown();
}

void MainWindow::onCacheStale() {
    dropProvisional();
    // Shown until the fresh comparison ends, so the emptied view explains itself.
    statusBar()->showMessage(
        tr("The bundles changed since the cached comparison; comparing them again."));
}

void MainWindow::dropProvisional() {
    if (!provisional_) {
        return;
    }
    provisional_.reset();
    model_->clearResults();
    drill_->showTensor(std::nullopt);
    headline_->clear();
    warnings_->clear();
    warningsDock_->hide();
    summary_->setLoading(0.0);
}

void MainWindow::onFinished(const std::shared_ptr<const DiffResult>& result) {
    // A provisional result that its check confirmed is already on screen: left as it is, so a
    // selection made meanwhile is kept.
    const bool checked = provisional_ && provisional_ == result;
    provisional_.reset();
    if (!checked) {
        showResult(result);
    }
    localizeUi_->setResult(result);
    updateVerdict();
    progress_->end();
    statusBar()->clearMessage();
    progressText_->setText(
        checked ? tr("Compared %1 tensors (summary cache, checked against the bundles' bytes).")
                      .arg(result->tensors.size())
                : tr("Compared %1 tensors.").arg(result->tensors.size()));
    const bool ok = !hasErrors(shownProblems_);
    if (ok) { // only pairs that opened are offered again
        recent_.add({reference_, candidate_});
        rebuildRecentMenu();
    }
    emit loadingFinished(ok);
    startup_->onLoaded(ok);
}

void MainWindow::showResult(const std::shared_ptr<const DiffResult>& result) {
    model_->setFinalResult(result);
    // Bundle errors keep the banner; warnings (replicas that disagree, ...) are grouped by kind
    // and module in the dock, so they inform without crowding out the story.
    warnings_->setGroups(groupWarnings(*result));
    warningsDock_->setVisible(!warnings_->groups().empty());
    // A few group rows: the dock informs, the tree and drill-down keep the space (a sixth of
    // the window at most, so a laptop screen keeps the tree readable).
    resizeDocks({warningsDock_},
                {std::min({40 + 22 * static_cast<int>(warnings_->groups().size()), 150,
                           std::max(height() / 6, 60)})},
                Qt::Vertical);
    // Errors not already shown when the bundles opened (those come back in the result).
    const auto shown = [this](const Diagnostic& d) {
        return std::any_of(shownProblems_.begin(), shownProblems_.end(), [&d](const auto& s) {
            return s.code == d.code && s.location == d.location && s.message == d.message;
        });
    };
    Diagnostics errors;
    for (const auto& g : warnings_->groups()) {
        if (g.severity == Severity::Error) {
            std::copy_if(g.items.begin(), g.items.end(), std::back_inserter(errors),
                         [&shown](const Diagnostic& d) { return !shown(d); });
        }
    }
    if (!errors.empty() || hasErrors(shownProblems_)) {
        shownProblems_.insert(shownProblems_.end(), errors.begin(), errors.end());
        problems_->setProblems(tr("The bundles have problems; affected tensors are marked "
                                  "invalid (purple)."),
                               shownProblems_);
    }
    tree_->setSteps(model_->results().iterations(), model_->results().microBatches());
    tree_->refresh();
    timeline_->setResult(result, HeatScale::spanning(result->summary.maxRatio));
    // Refused (a pair check's error) or nothing compared at all (no tensor in common): the
    // refusal alone, never "no divergence".
    if (pairRefusal(result->diagnostics) ||
        (result->tensors.empty() && hasErrors(result->diagnostics))) {
        showRefusal(*result);
        return;
    }
    showStory(*result);
    updateVerdict();
}

void MainWindow::showRefusal(const DiffResult& result) {
    // The error `ttrace diff` prints first for the same pair: the refusal, else the first
    // problem that kept a bundle from opening.
    const auto refusal = pairRefusal(result.diagnostics);
    const auto firstError =
        std::find_if(result.diagnostics.begin(), result.diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::Error; });
    const QString why = refusal ? QString::fromStdString(refusal->diagnostic.toString())
                        : firstError != result.diagnostics.end()
                            ? QString::fromStdString(firstError->toString())
                            : QString::fromStdString(verdictLine(result));
    headline_->setRefused(why);
    summary_->setInvalidVerdict(QString::fromStdString(verdictLine(result)));
    // The lines below the headline name the problem; the headline does not repeat it.
    problems_->setProblems(tr("These bundles were not compared:"), shownProblems_);
    const bool swapped = refusal && refusal->problem == PairProblem::SwappedRoles;
    problems_->setFixAction(swapped ? swap_ : nullptr);
}

void MainWindow::showStory(const DiffResult& result) {
    const StoryHeadline story = storyHeadline(result);
    headline_->setHeadline(story);
    headline_->setCaveat(QString::fromStdString(verdictCaveat(result)));
    if (story.divergent) {
        // The story starts at its iteration: the tree shows that step, the first divergence
        // in time selected in the column of its tensor kind. The tensor's own iteration: a
        // parameter sits on the timeline at the step before it (the step that wrote it).
        tree_->setIteration(story.tensor ? result.tensors[*story.tensor].id.iteration
                                         : story.iteration);
        const QString module = story.module;
        if (tree_->selectModule(
                module, columnOfKind(story.kind).value_or(model_->divergentColumn(module)))) {
            return;
        }
    }
    if (!tree_->selectFirstDivergence() && model_->rowCount() > 0) {
        tree_->selectModule(model_->index(0, 0).data(ModuleNameRole).toString(), kWorstColumn);
    }
}

bool MainWindow::selectTensor(std::size_t tensor) {
    const auto& results = model_->results();
    if (tensor >= results.size()) {
        return false;
    }
    const TensorId& id = results.tensor(tensor).id;
    // The tensor's own iteration, in the column of its kind (as the story selects it).
    tree_->setIteration(id.iteration);
    const QString module = QString::fromStdString(id.module);
    return tree_->selectModule(module,
                               columnOfKind(id.kind).value_or(model_->divergentColumn(module)));
}

QAction* MainWindow::localizeAction() const {
    return localizeUi_->localizeAction();
}

void MainWindow::setStartupLocalize(const QString& what) {
    startup_->setRequest(what);
}

QImage MainWindow::screenshot() {
    drill_->replotNow();
    return grab().toImage();
}

void MainWindow::onStopped(const QString& why) {
    // A cached result never checked against the bundles is not left on screen as an answer.
    dropProvisional();
    statusBar()->clearMessage();
    progress_->end();
    progressText_->setText(why);
    if (hasErrors(shownProblems_)) {
        // The words `ttrace diff` ends with for the same pair.
        DiffResult notCompared;
        notCompared.diagnostics = shownProblems_;
        notCompared.summary.clean = false;
        showRefusal(notCompared);
    } else {
        summary_->setCancelled();
    }
    emit loadingFinished(false);
    startup_->onLoaded(false);
}

void MainWindow::updateVerdict() {
    if (const DiffResult* r = model_->results().final()) {
        if (runVerdict(*r) == RunVerdict::Invalid) {
            // Not a confident story: the line `ttrace diff` ends with, counts and why.
            summary_->setInvalidVerdict(QString::fromStdString(verdictLine(*r)));
            return;
        }
        summary_->setVerdict(r->summary, static_cast<int>(model_->divergentModules().size()),
                             model_->firstDivergentModule());
    }
}

void MainWindow::onCurrentTensorChanged(std::optional<std::size_t> tensor) {
    drill_->showTensor(tensor);
    elements_->showTensor(tensor);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!droppedBundles(event->mimeData()).isEmpty() ||
        !droppedReport(event->mimeData()).isEmpty()) {
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    if (const QString report = droppedReport(event->mimeData()); !report.isEmpty()) {
        event->acceptProposedAction();
        pendingDrop_.clear();
        openReport(report);
        return;
    }
    const QStringList dirs = droppedBundles(event->mimeData());
    if (dirs.isEmpty()) {
        return;
    }
    event->acceptProposedAction();
    if (dirs.size() >= 2) {
        pendingDrop_.clear();
        openBundles(dirs[0], dirs[1]);
    } else if (pendingDrop_.isEmpty()) {
        pendingDrop_ = dirs[0];
        statusBar()->showMessage(tr("Reference: %1. Now drop the candidate bundle.")
                                     .arg(QDir::toNativeSeparators(pendingDrop_)));
    } else {
        const QString reference = pendingDrop_;
        pendingDrop_.clear();
        openBundles(reference, dirs[0]);
    }
}

} // namespace ttrace::ui
