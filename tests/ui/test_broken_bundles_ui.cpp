// Data-driven: every broken fixture bundle (written by `python -m ttrace_testing.fixtures`, listed
// in EXPECTED.txt with the phrase its error must contain) opened as the candidate shows that phrase
// in the window's problems banner, reports failure, and leaves the window usable.
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/warnings_model.h"
#include "ttrace/ui/problems_banner.h"

#include "broken_fixture_cases.h"
#include <QSignalSpy>

#include <QtTest>

class TestBrokenBundlesUi : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_ui_broken_bundles"));
    }
    void broken_data() {
        QTest::addColumn<QString>("dir");
        QTest::addColumn<QString>("expected");
        const auto cases = ttrace::testing::brokenFixtureCases();
        for (const auto& [dir, expected] : cases) {
            QTest::newRow(qPrintable(dir.section('/', -1))) << dir << expected;
        }
        QVERIFY(cases.size() >= 10);
    }
    void broken() {
        QFETCH(QString, dir);
        QFETCH(QString, expected);
        const QString valid = qEnvironmentVariable("TTRACE_FIXTURES_DIR") + "/valid-reference";
        ttrace::ui::MainWindow window;
        window.show();
        QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
        window.openBundles(valid, dir);
        QVERIFY(finished.wait(60000));
        // Disagreeing replicas are a warning about the run, not an error in the bundle: the
        // comparison completes and the warnings dock groups the ranks that disagree (the
        // banner is for errors only).
        const bool runWarning = expected.contains(QStringLiteral("disagree"));
        QCOMPARE(finished.takeFirst().front().toBool(), runWarning);
        const auto* banner = window.problemsBanner();
        QString shown = banner->text();
        if (runWarning) {
            QVERIFY(!banner->isVisible());
            const auto* warnings = window.warningsModel();
            for (int g = 0; g < warnings->rowCount(); ++g) {
                const auto group = warnings->index(g, 0);
                for (int i = 0; i < warnings->rowCount(group); ++i) {
                    shown += '\n' + warnings->index(i, 0, group).data(Qt::ToolTipRole).toString();
                }
            }
        } else {
            QVERIFY(banner->isVisible());
            QVERIFY(banner->hasErrors());
        }
        QVERIFY2(shown.contains(expected), qPrintable("expected '" + expected + "' in:\n" + shown));
        // The window is still usable: a good pair opens next.
        // A real pair: the same bundle on both sides is itself refused ("same-bundle").
        const QString demo = qEnvironmentVariable("TTRACE_DEMO_DIR");
        window.openBundles(demo + "/reference", demo + "/candidate");
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.takeFirst().front().toBool(), true);
        QVERIFY(!banner->isVisible());
    }
};

QTEST_MAIN(TestBrokenBundlesUi)
#include "test_broken_bundles_ui.moc"
