// The explorer window opens bundles offscreen, shows problems instead of crashing, and stays
// usable afterwards.
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/problems_banner.h"

#include <QAction>
#include <QMimeData>
#include <QSignalSpy>
#include <QtTest>

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("ttrace-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_main_window"));
    }
    void brokenBundleShowsMessage() {
        const QString fixtures = qEnvironmentVariable("TTRACE_FIXTURES_DIR");
        QVERIFY(!fixtures.isEmpty());
        ttrace::ui::MainWindow window;
        window.show();
        QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
        window.openBundles(fixtures + "/roundtrip", fixtures + "/broken/missing-rank-file");
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.front().front().toBool(), false);
        const auto* banner = window.problemsBanner();
        QVERIFY(banner->isVisible());
        QVERIFY2(banner->text().contains("rank-00001.h5"), qPrintable(banner->text()));
        const QImage shot = window.grab().toImage();
        QVERIFY(!shot.isNull());
    }
    void stillUsableAfterAFailure() {
        const QString fixtures = qEnvironmentVariable("TTRACE_FIXTURES_DIR");
        ttrace::ui::MainWindow window;
        window.show();
        QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
        window.openBundles(fixtures + "/valid", fixtures + "/broken/not-hdf5");
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.takeFirst().front().toBool(), false);
        // A real pair: the same bundle on both sides is itself refused ("same-bundle").
        const QString demo = qEnvironmentVariable("TTRACE_DEMO_DIR");
        window.openBundles(demo + "/reference", demo + "/candidate");
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.takeFirst().front().toBool(), true);
        QVERIFY(!window.problemsBanner()->hasErrors());
        QVERIFY(window.model()->rowCount() > 0);
        QVERIFY(window.model()->results().isFinal());
    }
    void dropTwoBundlesOpensThem() {
        const QString fixtures = qEnvironmentVariable("TTRACE_FIXTURES_DIR");
        ttrace::ui::MainWindow window;
        window.show();
        QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(fixtures + "/valid-reference"),
                      QUrl::fromLocalFile(fixtures + "/valid/manifest.json")});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton,
                              Qt::NoModifier);
        QCoreApplication::sendEvent(&window, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&window, &drop);
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.front().front().toBool(), true);
        QVERIFY(window.model()->results().isFinal());
    }
    void localizeWaitsForTheAgent() {
        ttrace::ui::MainWindow window;
        QVERIFY(!window.localizeAction()->isEnabled());
        QVERIFY(window.localizeAction()->toolTip().contains("connect to an agent",
                                                            Qt::CaseInsensitive));
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
