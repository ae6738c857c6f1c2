// Navigating the demo pair (a 1-rank reference, a TP2 x DP2 candidate with the norm-gradient
// bug) as in RenderDoc, Nsight and hotspot: back and forward through selections (buttons and
// Alt+Left / Alt+Right), the phase timeline strip (cells per iteration and phase, the first
// divergence marked, a click jumps there), the headline's per-rank statement against the
// per-rank plot, replays labelled with their iteration, and the element view of a sharded
// tensor (worst elements, error along a dimension, off the GUI thread, cancellable).
// Screenshots at 1280x720 and 1600x1000 go to TTRACE_SCREENSHOTS_DIR.
#include "ttrace/compare/element_errors.h"
#include "ttrace/io/time_place.h"
#include "ttrace/replay/localize_walk.h"
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/element_view.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/element_inspector.h"
#include "ttrace/ui/models/element_table_model.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/selection_history.h"
#include "ttrace/ui/models/story_headline.h"
#include "ttrace/ui/phase_timeline.h"
#include "ttrace/ui/replay_comparison_plot.h"
#include "ttrace/ui/selection_navigator.h"
#include "ttrace/ui/shard_error_plot.h"
#include "ttrace/ui/slice_error_plot.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QSignalSpy>
#include <QToolBar>
#include <QTreeView>
#include <QtTest>

#include <cmath>

using namespace ttrace;
using namespace ttrace::ui;

namespace {

QString screenshotPath(const QString& name) {
    const QString dir = qEnvironmentVariable("TTRACE_SCREENSHOTS_DIR");
    QDir().mkpath(dir);
    return QDir(dir).filePath(name);
}

struct Cell {
    QString module;
    int column;
};

Cell current(MainWindow& w) {
    return {w.treePane()->currentModule(), w.treePane()->treeView()->currentIndex().column()};
}

} // namespace

class TestNavigationViews : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_navigation_views"));
        const QString demo = qEnvironmentVariable("TTRACE_DEMO_DIR");
        window_ = std::make_unique<MainWindow>();
        window_->resize(1600, 1000);
        window_->show();
        QSignalSpy finished(window_.get(), &MainWindow::loadingFinished);
        window_->openBundles(demo + "/reference", demo + "/candidate");
        QVERIFY(finished.wait(120000));
        QVERIFY(finished.front().front().toBool());
        result_ = window_->model()->results().final();
        QVERIFY(result_ && result_->firstDivergence);
    }

    void historyGoesBackAndForward() {
        SelectionHistory h;
        h.visit({"a", 1, 0});
        h.visit({"a", 1, 0}); // the same place again records nothing
        h.visit({"b", 2, std::nullopt});
        h.visit({"c", 3, 1});
        QCOMPARE(h.size(), std::size_t{3});
        QCOMPARE(h.back()->module, QStringLiteral("b"));
        QCOMPARE(h.back()->module, QStringLiteral("a"));
        QVERIFY(!h.back());
        QCOMPARE(h.forward()->module, QStringLiteral("b"));
        h.visit({"d", 1, 0}); // a new branch drops "c"
        QVERIFY(!h.canGoForward());
        QCOMPARE(h.size(), std::size_t{3});

        MainWindow& w = *window_;
        SelectionNavigator* nav = w.navigator();
        const auto* toolbar = w.findChild<QToolBar*>(QStringLiteral("mainToolBar"));
        QVERIFY(toolbar->actions().contains(nav->backAction()));
        QVERIFY(toolbar->actions().contains(nav->forwardAction()));
        const Cell start = current(w);
        QVERIFY(w.treePane()->selectModule("layers.0.mlp.fc2", 2));
        QVERIFY(w.treePane()->selectModule("loss", 1));
        QVERIFY(nav->backAction()->isEnabled());
        QVERIFY(!nav->forwardAction()->isEnabled());
        // The toolbar button.
        nav->backAction()->trigger();
        QCOMPARE(current(w).module, QStringLiteral("layers.0.mlp.fc2"));
        QCOMPARE(current(w).column, 2);
        // The keys, as in a browser: Alt+Left, Alt+Right.
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QTest::keyClick(&w, Qt::Key_Left, Qt::AltModifier);
        QCOMPARE(current(w).module, start.module);
        QCOMPARE(current(w).column, start.column);
        QTest::keyClick(&w, Qt::Key_Right, Qt::AltModifier);
        QCOMPARE(current(w).module, QStringLiteral("layers.0.mlp.fc2"));
        QVERIFY(nav->forwardAction()->isEnabled());
        // Going back restores the iteration shown with the selection.
        w.treePane()->setIteration(1);
        QVERIFY(w.treePane()->selectModule("layers.1.norm", 1));
        w.treePane()->setIteration(0);
        QVERIFY(w.treePane()->selectModule("layers.0.norm", 1));
        // Showing another iteration is a place of its own (the cell shows other tensors).
        nav->goBack();
        QCOMPARE(current(w).module, QStringLiteral("layers.1.norm"));
        QCOMPARE(w.model()->stepFilter().iteration, std::optional<std::int64_t>(0));
        nav->goBack();
        QCOMPARE(current(w).module, QStringLiteral("layers.1.norm"));
        QCOMPARE(w.model()->stepFilter().iteration, std::optional<std::int64_t>(1));
    }

    void timelineShowsPhasesAndJumps() {
        MainWindow& w = *window_;
        PhaseTimeline* strip = w.phaseTimeline();
        QVERIFY(strip->isVisible());
        const auto& cells = strip->cells();
        QVERIFY(cells.size() >= 4);
        // Cells in time order; each cell's worst ratio is the worst of the tensors placed there.
        int firsts = 0;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const auto& c = cells[i];
            if (i > 0) {
                const TimePlace before{cells[i - 1].iteration, cells[i - 1].phase};
                QVERIFY(before < (TimePlace{c.iteration, c.phase}));
            }
            double worst = 0.0;
            std::size_t divergent = 0;
            for (const auto& t : result_->tensors) {
                const TimePlace at = timePlaceOf(t.id);
                if (at.iteration == c.iteration && at.phase == c.phase &&
                    (t.status == Status::Clean || t.status == Status::Divergent)) {
                    worst = std::max(worst, t.ratio);
                    divergent += t.status == Status::Divergent ? 1 : 0;
                }
            }
            QCOMPARE(c.worstRatio, worst);
            QCOMPARE(c.divergent, divergent);
            firsts += c.firstDivergence ? 1 : 0;
        }
        QCOMPARE(firsts, 1);
        const auto first = std::find_if(cells.begin(), cells.end(),
                                        [](const PhaseCell& c) { return c.firstDivergence; });
        QCOMPARE(first->iteration, result_->firstDivergence->iteration);
        QCOMPARE(first->phase, result_->firstDivergence->phase);
        QCOMPARE(first->target, std::optional(result_->firstDivergence->tensor));
        // A click on another divergent phase selects where it first diverges ...
        const auto other = std::find_if(cells.begin(), cells.end(), [](const PhaseCell& c) {
            return !c.firstDivergence && c.divergent > 0;
        });
        QVERIFY(other != cells.end());
        const auto otherIndex = static_cast<std::size_t>(other - cells.begin());
        QTest::mouseClick(strip, Qt::LeftButton, {}, strip->cellRect(otherIndex).center());
        const TensorResult& target = result_->tensors[*other->target];
        QCOMPARE(target.status, Status::Divergent);
        QCOMPARE(w.treePane()->currentModule(), QString::fromStdString(target.id.module));
        QCOMPARE(w.model()->stepFilter().iteration, std::optional(target.id.iteration));
        // ... and the marked cell goes back to the first divergence, as the headline names it.
        const auto firstIndex = static_cast<std::size_t>(first - cells.begin());
        QTest::mouseClick(strip, Qt::LeftButton, {}, strip->cellRect(firstIndex).center());
        QCOMPARE(w.treePane()->currentModule(), w.headlineBar()->headline().module);
        const auto shown = w.treePane()->currentTensor();
        QVERIFY(shown);
        const TensorId& a = result_->tensors[*shown].id;
        const TensorId& b = result_->tensors[result_->firstDivergence->tensor].id;
        QCOMPARE(a.kind, b.kind);
        QCOMPARE(a.iteration, b.iteration);
    }

    void perRankStatementAgreesWithThePlot() {
        MainWindow& w = *window_;
        // The headline's tensor in the drill-down, as a click on the headline shows it.
        w.drillDownPane()->showTensor(result_->firstDivergence->tensor);
        const StoryHeadline& story = w.headlineBar()->headline();
        std::vector<int> said(story.ranks.begin(), story.ranks.end());
        QVERIFY(!said.empty());
        QCOMPARE(said, w.drillDownPane()->shardPlot()->ranksBeyondTolerance());
        // A pair whose replicas disagree (rank 1's copy of a replicated tensor edited): every
        // divergent tensor whose replicas disagree names exactly the plot's ranks.
        const QString fixtures = qEnvironmentVariable("TTRACE_FIXTURES_DIR");
        MainWindow replicas;
        replicas.show();
        QSignalSpy finished(&replicas, &MainWindow::loadingFinished);
        replicas.openBundles(fixtures + "/valid-reference", fixtures + "/broken/replica-disagree");
        QVERIFY(finished.wait(120000));
        const DiffResult* pair = replicas.model()->results().final();
        QVERIFY(pair);
        int checked = 0;
        for (std::size_t i = 0; i < pair->tensors.size(); ++i) {
            const auto& t = pair->tensors[i];
            for (const auto& s : t.signatures) {
                if (s.kind != SignatureKind::ReplicasDisagree || s.ranks.empty()) {
                    continue;
                }
                replicas.drillDownPane()->showTensor(i);
                QCOMPARE(s.ranks, replicas.drillDownPane()->shardPlot()->ranksBeyondTolerance());
                // The error shape line says how far each rank is off, as a relative
                // difference, never "differ by 1".
                const QString diagnosis = replicas.drillDownPane()->diagnosisLabel()->text();
                QVERIFY2(diagnosis.contains("relative difference to the reference"),
                         qPrintable(diagnosis));
                QVERIFY2(!diagnosis.contains("differ by"), qPrintable(diagnosis));
                ++checked;
            }
        }
        qInfo("replica statements checked against the per-rank plot: %d", checked);
        QVERIFY(checked > 0);
        // The headline of that pair says the same ranks as its plot.
        QVERIFY(pair->firstDivergence);
        replicas.drillDownPane()->showTensor(pair->firstDivergence->tensor);
        const StoryHeadline& replicaStory = replicas.headlineBar()->headline();
        QCOMPARE(std::vector<int>(replicaStory.ranks.begin(), replicaStory.ranks.end()),
                 replicas.drillDownPane()->shardPlot()->ranksBeyondTolerance());
        qInfo("replica pair headline: %s", qPrintable(replicas.headlineBar()->text()));
    }

    void replayIsLabelledWithItsIteration() {
        MainWindow& w = *window_;
        // A norm judged at iteration 0 (the reduction replay's verdict as the agent returns
        // it: the module's step replay agrees).
        const auto& first = result_->tensors[result_->firstDivergence->tensor];
        replay::ModuleVerdict v;
        v.suspect = {first.id.module, 0, 0, replay::LocalizePhase::Reduction, first.ratio};
        v.verdict = replay::Verdict::Inherited;
        w.model()->addLocalizeVerdict(v);
        replay::LocalizeResult r;
        r.verdicts = {v};
        r.guiltyPhase = replay::LocalizePhase::Reduction;
        r.guiltyParameters = {first.id.module};
        w.model()->finishLocalize(r);
        QVERIFY(w.selectTensor(result_->firstDivergence->tensor));
        w.drillDownPane()->refreshReplay();
        const auto* plot = w.drillDownPane()->replayPlot();
        QVERIFY(plot->isVisible());
        QVERIFY2(plot->title().contains("iteration 0, gradient reduction") &&
                     plot->title().contains("introduced in gradient reduction"),
                 qPrintable(plot->title()));
        // The same module at iteration 1: iteration 0's replay is labelled as not this one's.
        std::optional<std::size_t> later;
        for (std::size_t i = 0; i < result_->tensors.size() && !later; ++i) {
            const auto& t = result_->tensors[i];
            if (t.id.module == first.id.module && replay::divergenceStartOf(t.id).iteration == 1) {
                later = i;
            }
        }
        QVERIFY(later);
        QVERIFY(w.selectTensor(*later));
        QVERIFY2(plot->title().contains("iteration 0") &&
                     plot->title().contains("not this tensor's iteration 1"),
                 qPrintable(plot->title()));
        // A later verdict of iteration 1 keeps iteration 0's.
        v.suspect.iteration = 1;
        v.suspect.phase = replay::LocalizePhase::Forward;
        w.model()->addLocalizeVerdict(v);
        QVERIFY(w.model()->localize().verdict(first.id.module, 0));
        QVERIFY(w.model()->localize().verdict(first.id.module, 1));
        QCOMPARE(w.model()->localize().iterations(first.id.module),
                 (std::vector<std::int64_t>{0, 1}));
        w.model()->clearLocalize();
    }

    void elementViewShowsTheWorstElements() {
        MainWindow& w = *window_;
        ElementView* view = w.elementView();
        QAbstractItemModelTester tester(view->tableModel(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(w.selectTensor(result_->firstDivergence->tensor));
        QSignalSpy shown(view, &ElementView::reportShown);
        w.elementsDock()->show(); // opening the dock inspects the selected tensor
        QVERIFY(shown.wait(60000));
        const auto inspected = w.drillDownPane()->currentTensor(); // the selected cell's
        QVERIFY(inspected);
        const TensorResult& t = result_->tensors[*inspected];
        QVERIFY(t.metrics.shards.size() > 1); // the candidate's tensor is sharded
        const auto& elements = view->tableModel()->elements();
        QVERIFY2(!elements.empty(), qPrintable(view->statusLabel()->text()));
        QCOMPARE(elements.front().error, t.metrics.maxAbsError);
        QCOMPARE(elements.front().index.size(), t.shape.size());
        QCOMPARE(view->tableModel()->rowCount(), static_cast<int>(elements.size()));
        QComboBox* dims = view->dimensionBox();
        const int dim = dims->currentData().toInt();
        QVERIFY(dim >= 0 && static_cast<std::size_t>(dim) < t.shape.size());
        QCOMPARE(view->slicePlot()->barCount(), static_cast<int>(t.shape[dim]));
        // Another dimension.
        dims->setCurrentIndex(1); // dim 0
        shown.clear();
        view->inspect();
        QVERIFY(shown.wait(60000));
        QCOMPARE(view->slicePlot()->barCount(), static_cast<int>(t.shape.front()));
        view->replotNow();
        QVERIFY(w.screenshot().save(screenshotPath("explorer-elements-1600x1000.png")));
        w.resize(1280, 720);
        QVERIFY(QTest::qWaitFor([&] { return w.size() == QSize(1280, 720); }, 2000));
        const QSize hint = w.minimumSizeHint();
        QVERIFY2(hint.width() <= 1280 && hint.height() <= 720,
                 qPrintable(QStringLiteral("%1x%2").arg(hint.width()).arg(hint.height())));
        QVERIFY(w.screenshot().save(screenshotPath("explorer-elements-1280x720.png")));
        w.elementsDock()->hide();
        w.resize(1600, 1000);
    }

    void elementInspectionCanBeCancelled() {
        const QString demo = qEnvironmentVariable("TTRACE_DEMO_DIR");
        const TensorResult& t = result_->tensors[result_->firstDivergence->tensor];
        ElementInspector inspector;
        QSignalSpy done(&inspector, &ElementInspector::finished);
        ElementQuery q;
        q.id = t.id;
        q.tolerance = t.tolerance.value;
        inspector.start(demo + "/reference", demo + "/candidate", q);
        QVERIFY(inspector.isRunning());
        inspector.cancel(); // before the worker has read both sides
        QVERIFY(done.wait(60000));
        QVERIFY(done.front().front().value<ElementReport>().cancelled);
        QVERIFY(!inspector.isRunning());
        // A tensor of a missing module: the problem names the bundle and tensor.
        done.clear();
        q.id.module = "no.such.module";
        inspector.start(demo + "/reference", demo + "/candidate", q);
        QVERIFY(done.wait(60000));
        const auto missing = done.front().front().value<ElementReport>();
        QVERIFY(!missing.problems.empty());
        QVERIFY2(missing.problems.front().toString().find("no.such.module") != std::string::npos,
                 missing.problems.front().toString().c_str());
    }

    void screenshots() {
        MainWindow& w = *window_;
        QVERIFY(w.selectTensor(result_->firstDivergence->tensor));
        w.resize(1280, 720);
        QVERIFY(QTest::qWaitFor([&] { return w.size() == QSize(1280, 720); }, 2000));
        QVERIFY(w.phaseTimeline()->isVisible());
        QVERIFY(w.screenshot().save(screenshotPath("explorer-timeline-1280x720.png")));
        w.resize(1600, 1000);
        QVERIFY(QTest::qWaitFor([&] { return w.size() == QSize(1600, 1000); }, 2000));
        QVERIFY(w.screenshot().save(screenshotPath("explorer-timeline-1600x1000.png")));
    }

    void cleanupTestCase() { window_.reset(); }

private:
    std::unique_ptr<MainWindow> window_;
    const DiffResult* result_ = nullptr;
};

QTEST_MAIN(TestNavigationViews)
#include "test_navigation_views.moc"
