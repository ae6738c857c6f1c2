// The explorer window opens bundles offscreen and shows problems instead of crashing.
#include "ttrace/ui/main_window.h"

#include <QLabel>
#include <QtTest>

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void brokenBundleShowsMessage() {
        const QString fixtures = qEnvironmentVariable("TTRACE_FIXTURES_DIR");
        QVERIFY(!fixtures.isEmpty());
        ttrace::ui::MainWindow window;
        window.show();
        window.openBundles(fixtures + "/roundtrip", fixtures + "/broken/missing-rank-file");
        const auto* label = qobject_cast<QLabel*>(window.centralWidget());
        QVERIFY(label);
        QVERIFY2(label->text().contains("rank-00001.h5"), qPrintable(label->text()));
        const QImage shot = window.grab().toImage();
        QVERIFY(!shot.isNull());
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
