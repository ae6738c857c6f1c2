// The explorer window opens bundles offscreen, shows problems instead of crashing, stays usable
// afterwards, and shows a cached comparison at once but never as final before checking it.
#include "ttrace/compare/cache_fingerprint.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/problems_banner.h"

#include <QAction>
#include <QElapsedTimer>
#include <QMimeData>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

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
        // A reference and a copy of its candidate with a rank file missing.
        window.openBundles(fixtures + "/valid-reference", fixtures + "/broken/missing-rank-file");
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
    void reopenShowsTheCacheThenChecksIt() {
        namespace fs = std::filesystem;
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path root = tmp.path().toStdString();
        const fs::path demo = qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
        fs::copy(demo / "reference", root / "ref", fs::copy_options::recursive);
        fs::copy(demo / "candidate", root / "cand", fs::copy_options::recursive);
        const QByteArray oldCache = qgetenv("XDG_CACHE_HOME");
        qputenv("XDG_CACHE_HOME", QByteArray::fromStdString((root / "xdg").string()));
        const QString ref = QString::fromStdString((root / "ref").string());
        const QString cand = QString::fromStdString((root / "cand").string());

        // First open: nothing cached, so nothing provisional; the comparison is stored.
        std::size_t tensors = 0;
        {
            ttrace::ui::MainWindow window;
            QSignalSpy provisional(&window, &ttrace::ui::MainWindow::provisionalShown);
            QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
            window.openBundles(ref, cand);
            QVERIFY(finished.wait(60000));
            QVERIFY(finished.front().front().toBool());
            QCOMPARE(provisional.size(), 0);
            tensors = window.model()->results().size();
            QVERIFY(tensors > 0);
        }
        const auto key = ttrace::diffCacheKey(root / "ref", root / "cand", {});

        // Second open, a new window: the cached result is shown before its check ends, then the
        // same result is confirmed.
        {
            ttrace::ui::MainWindow window;
            QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
            bool finalBeforeCheck = true;
            std::size_t shown = 0;
            const ttrace::DiffResult* shownResult = nullptr;
            connect(&window, &ttrace::ui::MainWindow::provisionalShown, this, [&] {
                finalBeforeCheck = !finished.isEmpty();
                shown = window.model()->results().size();
                shownResult = window.model()->results().final();
            });
            QElapsedTimer clock;
            clock.start();
            window.openBundles(ref, cand);
            QVERIFY(finished.wait(60000));
            qInfo("reopen: checked after %lld ms", static_cast<long long>(clock.elapsed()));
            QVERIFY(finished.front().front().toBool());
            QVERIFY(shownResult != nullptr);
            QVERIFY(!finalBeforeCheck);
            QCOMPARE(shown, tensors);
            // Confirmed, not recomputed: the very result shown is the final one.
            QCOMPARE(window.model()->results().final(), shownResult);
        }

        // The bytes change while the stamps point at the old entry (what a file system with
        // coarse or preserved times allows): shown, found stale, dropped and compared again.
        std::ofstream(root / "cand" / "manifest.json", std::ios::app) << "\n";
        const auto fingerprint = ttrace::diffCacheFingerprint(root / "ref", root / "cand", {});
        ttrace::rememberFingerprint(fingerprint, key);
        {
            ttrace::ui::MainWindow window;
            QSignalSpy provisional(&window, &ttrace::ui::MainWindow::provisionalShown);
            QSignalSpy finished(&window, &ttrace::ui::MainWindow::loadingFinished);
            bool clearedWhenStale = false;
            QString staleMessage;
            connect(window.statusBar(), &QStatusBar::messageChanged, this,
                    [&](const QString& message) {
                        if (message.contains(QStringLiteral("changed since the cached"))) {
                            staleMessage = message;
                            clearedWhenStale = !window.model()->results().isFinal();
                        }
                    });
            window.openBundles(ref, cand);
            QVERIFY(finished.wait(60000));
            QCOMPARE(provisional.size(), 1);
            QVERIFY2(!staleMessage.isEmpty(), "the stale cache is said");
            QVERIFY(clearedWhenStale);
            QVERIFY(finished.front().front().toBool());
            QVERIFY(window.model()->results().isFinal());
            QCOMPARE(window.model()->results().size(), tensors);
            QVERIFY(window.statusBar()->currentMessage().isEmpty());
        }
        // The fresh comparison was stored and the stamps now point at it.
        const auto seen = ttrace::loadSeenDiff(fingerprint);
        QVERIFY(seen);
        QVERIFY(seen->contentKey != key);
        QCOMPARE(seen->contentKey, ttrace::diffCacheKey(root / "ref", root / "cand", {}));
        qputenv("XDG_CACHE_HOME", oldCache);
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
