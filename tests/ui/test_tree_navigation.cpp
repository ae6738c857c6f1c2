// Navigating the layer tree as in hotspot or RenderDoc, on the demo pair: the filter matches
// names and types, as text or as a regular expression, says when nothing matches and clears
// with Esc without losing the selection; the toolbar tells "3 of 9 divergences"; the heat scale
// reaches the run's worst ratio (806 and 2.1e5 differ) and the legend says so.
#include "ttrace/ui/heat_legend.h"
#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/color_scale.h"
#include "ttrace/ui/models/layer_filter_proxy.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/roles.h"

#include <QAction>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTreeView>
#include <QtTest>

using namespace ttrace::ui;

namespace {

// Module names the filtered tree shows (captured modules only).
QStringList shownModules(const QAbstractItemModel* proxy, const QModelIndex& parent = {}) {
    QStringList out;
    for (int r = 0; r < proxy->rowCount(parent); ++r) {
        const QModelIndex i = proxy->index(r, 0, parent);
        if (i.data(IsModuleRole).toBool()) {
            out << i.data(ModuleNameRole).toString();
        }
        out << shownModules(proxy, i);
    }
    return out;
}

} // namespace

class TestTreeNavigation : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_tree_navigation"));
        const QString demo = qEnvironmentVariable("TTRACE_DEMO_DIR");
        window_ = std::make_unique<MainWindow>();
        window_->show();
        QSignalSpy finished(window_.get(), &MainWindow::loadingFinished);
        window_->openBundles(demo + "/reference", demo + "/candidate");
        QVERIFY(finished.wait(120000));
        QVERIFY(finished.front().front().toBool());
    }

    void filterMatchesNamesTypesAndRegex() {
        LayerTreePane* pane = window_->treePane();
        QLineEdit* search = pane->searchBox();
        const QString before = pane->currentModule();
        QVERIFY(!before.isEmpty());
        search->setText("fc2");
        // Matches, with the modules that contain them.
        QCOMPARE(shownModules(pane->proxy()),
                 QStringList({"layers.0", "layers.0.mlp.fc2", "layers.1", "layers.1.mlp.fc2"}));
        QVERIFY(!pane->noMatchLabel()->isVisibleTo(pane));
        // A type, in any case.
        search->setText("rmsnorm");
        QCOMPARE(shownModules(pane->proxy()),
                 QStringList({"layers.0", "layers.0.norm", "layers.1", "layers.1.norm"}));
        // A regular expression, over names and types.
        pane->regexAction()->setChecked(true);
        search->setText("^layers\\.1\\.mlp\\.fc[12]$|Loss$");
        QCOMPARE(shownModules(pane->proxy()),
                 QStringList({"layers.1", "layers.1.mlp.fc1", "layers.1.mlp.fc2", "loss"}));
        search->setText("layers.(");
        QVERIFY(pane->noMatchLabel()->isVisibleTo(pane));
        QVERIFY2(pane->noMatchLabel()->text().startsWith("Invalid regular expression"),
                 qPrintable(pane->noMatchLabel()->text()));
        pane->regexAction()->setChecked(false);
        // Nothing matches: said, not an empty tree without a word.
        search->setText("attn");
        QCOMPARE(shownModules(pane->proxy()), QStringList());
        QVERIFY(pane->noMatchLabel()->isVisibleTo(pane));
        QVERIFY2(pane->noMatchLabel()->text().contains("attn"),
                 qPrintable(pane->noMatchLabel()->text()));
        // Esc clears; the selection is where it was.
        search->setFocus();
        QTest::keyClick(search, Qt::Key_Escape);
        QVERIFY(search->text().isEmpty());
        QVERIFY(!pane->noMatchLabel()->isVisibleTo(pane));
        QCOMPARE(pane->currentModule(), before);
        QVERIFY(shownModules(pane->proxy()).size() >= 11);
    }

    void positionAmongDivergences() {
        LayerTreePane* pane = window_->treePane();
        const QStringList divergent = window_->model()->divergentModules();
        QVERIFY(divergent.size() >= 2);
        QVERIFY(pane->selectFirstDivergence());
        const auto at = divergent.indexOf(pane->currentModule());
        QVERIFY(at >= 0);
        QCOMPARE(pane->positionLabel()->text(),
                 QStringLiteral("%1 of %2 divergences").arg(at + 1).arg(divergent.size()));
        pane->nextDivergentAction()->trigger();
        QCOMPARE(pane->positionLabel()->text(), QStringLiteral("%1 of %2 divergences")
                                                    .arg((at + 1) % divergent.size() + 1)
                                                    .arg(divergent.size()));
    }

    void heatScaleSpansTheData() {
        // The demo's worst ratio is far above 1e3: the scale reaches it and the legend says so.
        const auto* result = window_->model()->results().final();
        QVERIFY(result);
        const double worst = result->summary.maxRatio;
        QVERIFY(worst > 1e4);
        const HeatLegend* legend = window_->treePane()->legend();
        QVERIFY(legend->scale().maxRatio >= worst * 0.999);
        QVERIFY2(legend->caption().contains("log scale to the worst ratio"),
                 qPrintable(legend->caption()));
        // 806 and 2.1e5 no longer share the saturated colour.
        const HeatScale scale = HeatScale::spanning(2.1e5);
        QVERIFY(heatColor(806.0, scale) != heatColor(2.1e5, scale));
        QCOMPARE(heatColor(2e3), heatColor(2.1e5)); // a fixed 1e3 scale saturates
        QVERIFY(heatColor(2e3, scale) != heatColor(2.1e5, scale));
        QVERIFY(heatColor(806.0, scale).lightness() > heatColor(2.1e5, scale).lightness());
        QVERIFY(heatColor(2.0, scale).red() > heatColor(2.0, scale).green()); // still red
        QCOMPARE(heatPosition(2.1e5, scale), 1.0);
    }

    void cleanupTestCase() { window_.reset(); }

private:
    std::unique_ptr<MainWindow> window_;
};

QTEST_MAIN(TestTreeNavigation)
#include "test_tree_navigation.moc"
