// The window fits a laptop: at 1280x720 every toolbar action, the legend and the status bar are
// on screen, the window's minimum size stays within 1280x720 whatever is shown (the demo's
// story, a broken pair's long banner and caveat), the Module column stays in view when a cell
// far right is selected, and screenshots at 1280x720 and 1600x1000 are written for review.
#include "ttrace/ui/drill_down_pane.h"
#include "ttrace/ui/headline_bar.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/layer_tree_view.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/tensor_columns.h"
#include "ttrace/ui/problems_banner.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QToolBar>
#include <QTreeView>
#include <QtTest>

#include <filesystem>

namespace {

const QSize kLaptop(1280, 720);

bool fits(const QSize& size, const QSize& screen) {
    return size.width() <= screen.width() && size.height() <= screen.height();
}

bool open(ttrace::ui::MainWindow& window, const QString& ref, const QString& cand) {
    QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
    window.openBundles(ref, cand);
    return finished.wait(120000);
}

// Whether `w` lies inside the window's visible area (not clipped off its edge).
bool onScreen(const QWidget& window, const QWidget* w) {
    if (!w || !w->isVisible()) {
        return false;
    }
    const QRect r(w->mapTo(&window, QPoint(0, 0)), w->size());
    return window.rect().contains(r);
}

QString screenshotPath(const QString& name) {
    const QString dir = qEnvironmentVariable("TTRACE_SCREENSHOTS_DIR");
    QDir().mkpath(dir);
    return QDir(dir).filePath(name);
}

} // namespace

class TestLaptopLayout : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_laptop_layout"));
        demo_ = qEnvironmentVariable("TTRACE_DEMO_DIR");
        QVERIFY(QFileInfo(demo_ + "/candidate/manifest.json").isFile());
    }

    void everyActionAndTheStatusBarFit1280x720() {
        ttrace::ui::MainWindow window;
        QVERIFY2(fits(window.minimumSizeHint(), kLaptop),
                 qPrintable(QStringLiteral("%1x%2")
                                .arg(window.minimumSizeHint().width())
                                .arg(window.minimumSizeHint().height())));
        window.resize(kLaptop);
        window.show();
        QVERIFY(open(window, demo_ + "/reference", demo_ + "/candidate"));
        QVERIFY(window.headlineBar()->headline().divergent);
        const QSize hint = window.minimumSizeHint();
        qInfo("minimum size with the demo's story: %dx%d", hint.width(), hint.height());
        QVERIFY2(fits(hint, kLaptop),
                 qPrintable(QStringLiteral("%1x%2").arg(hint.width()).arg(hint.height())));
        QCOMPARE(window.size(), kLaptop);
        const auto* toolbar = window.findChild<QToolBar*>(QStringLiteral("mainToolBar"));
        QVERIFY(toolbar);
        for (QAction* a : toolbar->actions()) {
            if (!a->isSeparator()) {
                QVERIFY2(onScreen(window, toolbar->widgetForAction(a)), qPrintable(a->text()));
            }
        }
        QVERIFY(onScreen(window, window.statusBar()));
        QVERIFY(onScreen(window, window.headlineBar()));
        QVERIFY(onScreen(window, window.treePane()->findChild<QWidget*>("heatLegend")));
        QVERIFY(window.screenshot().save(screenshotPath("explorer-1280x720.png")));

        window.resize(1600, 1000);
        QVERIFY(QTest::qWaitFor([&] { return window.size() == QSize(1600, 1000); }, 2000));
        QVERIFY(window.screenshot().save(screenshotPath("explorer-1600x1000.png")));
    }

    void aBrokenPairStillFits() {
        namespace fs = std::filesystem;
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path cand = fs::path(tmp.path().toStdString()) / "candidate";
        fs::copy(fs::path(demo_.toStdString()) / "candidate", cand, fs::copy_options::recursive);
        fs::resize_file(cand / "rank-00002.h5", fs::file_size(cand / "rank-00002.h5") / 3);
        ttrace::ui::MainWindow window;
        window.resize(kLaptop);
        window.show();
        QVERIFY(open(window, demo_ + "/reference", QString::fromStdString(cand.string())));
        QVERIFY(window.problemsBanner()->isVisible());
        QVERIFY(!window.headlineBar()->caveat().isEmpty());
        const QSize hint = window.minimumSizeHint();
        qInfo("minimum size with a truncated rank file: %dx%d", hint.width(), hint.height());
        QVERIFY2(fits(hint, kLaptop),
                 qPrintable(QStringLiteral("%1x%2").arg(hint.width()).arg(hint.height())));
        QCOMPARE(window.size(), kLaptop);
        QVERIFY(onScreen(window, window.statusBar()));
        QVERIFY(window.screenshot().save(screenshotPath("explorer-truncated-1280x720.png")));
    }

    void moduleColumnStaysInView() {
        ttrace::ui::MainWindow window;
        window.resize(kLaptop);
        window.show();
        QVERIFY(open(window, demo_ + "/reference", demo_ + "/candidate"));
        auto* view = qobject_cast<ttrace::ui::LayerTreeView*>(window.treePane()->treeView());
        QVERIFY(view);
        // The last kind column, far right: the tree scrolls to it, the names stay.
        const int last = ttrace::ui::kLayerTreeColumnCount - 1;
        QVERIFY(window.treePane()->selectModule("layers.1.mlp.fc2", last));
        const QModelIndex current = view->currentIndex();
        QCOMPARE(current.column(), last);
        QVERIFY(view->viewport()->rect().intersects(view->visualRect(current)));
        QTreeView* frozen = view->frozenView();
        QVERIFY(frozen->isVisible());
        const QRect name = frozen->visualRect(current.siblingAtColumn(ttrace::ui::kNameColumn));
        QVERIFY(frozen->viewport()->rect().contains(name));
        QCOMPARE(frozen->columnWidth(ttrace::ui::kNameColumn),
                 view->columnWidth(ttrace::ui::kNameColumn));
        QCOMPARE(frozen->width(), view->columnWidth(ttrace::ui::kNameColumn));
        // The selected cell is not hidden under the frozen names.
        QVERIFY(view->visualRect(current).left() >= view->columnWidth(ttrace::ui::kNameColumn));
        // Expansion is shared: collapsing all collapses the names too.
        view->collapseAll();
        const QModelIndex layers = view->model()->index(0, 0);
        QVERIFY(QTest::qWaitFor([&] { return !frozen->isExpanded(layers); }, 2000));
        view->expandAll();
        QVERIFY(QTest::qWaitFor(
            [&] { return frozen->isExpanded(layers) || !view->model()->hasChildren(layers); },
            2000));
    }

    // A long Localize conclusion (nine parameters) and a long "also in this phase" list wrap
    // the headline to several lines: every line stays whole, at 1600x1000 with the warnings
    // dock open (the demo's screenshot) and on a laptop.
    void aWrappedHeadlineIsNeverClipped() {
        for (const QSize size : {QSize(1600, 1000), kLaptop}) {
            ttrace::ui::MainWindow window;
            window.resize(size);
            window.show();
            QVERIFY(open(window, demo_ + "/reference", demo_ + "/candidate"));
            auto* warnings = window.findChild<QDockWidget*>(QStringLiteral("warningsDock"));
            if (warnings) {
                warnings->show();
            }
            QString params;
            for (int i = 0; i < 9; ++i) {
                params += QStringLiteral("layers.%1.pre_mlp_layernorm_with_a_long_name, ").arg(i);
            }
            const QString conclusion =
                QStringLiteral("INTRODUCED: introduced in gradient reduction: parameters of ") +
                params + QStringLiteral("final_layernorm · 9 replay(s) in 0.2 s");
            window.headlineBar()->setConclusion(conclusion, true);
            window.headlineBar()->setCaveat(
                QStringLiteral("Invalid tensors come before this divergence: ") + params);
            // The headless export grabs right after Localize sets its conclusion, before the
            // event loop runs: the export itself must settle the layout.
            const QString shot = screenshotPath(QStringLiteral("explorer-long-headline-%1x%2.png")
                                                    .arg(size.width())
                                                    .arg(size.height()));
            QVERIFY(window.exportPng(shot, nullptr, nullptr));
            for (const auto* label : window.headlineBar()->findChildren<QLabel*>()) {
                if (label->isVisible()) {
                    QVERIFY2(label->height() >= label->heightForWidth(label->width()),
                             qPrintable(QStringLiteral("%1 at %2x%3: %4 px for %5 px of text")
                                            .arg(label->objectName())
                                            .arg(size.width())
                                            .arg(size.height())
                                            .arg(label->height())
                                            .arg(label->heightForWidth(label->width()))));
                }
            }
            // Cut short on screen, whole where it is read.
            QCOMPARE(window.headlineBar()->conclusion(), conclusion);
            QTest::qWait(100);
            QVERIFY2(window.size() == size, qPrintable(QStringLiteral("the window became %1x%2")
                                                           .arg(window.width())
                                                           .arg(window.height())));
            const QSize hint = window.minimumSizeHint();
            QVERIFY2(fits(hint, size),
                     qPrintable(QStringLiteral("%1x%2").arg(hint.width()).arg(hint.height())));
            QVERIFY(onScreen(window, window.statusBar()));
        }
    }

private:
    QString demo_;
};

QTEST_MAIN(TestLaptopLayout)
#include "test_laptop_layout.moc"
