// The explorer's exports run as a job on the export runner: the bytes are made (a PNG encoded, a
// report rendered) and written off the GUI thread, progress arrives two steps a file, the outcome
// comes back on the GUI thread with the files written; a file that cannot be written is reported
// by its name and does not stop the next one; Cancel stops before the next file. Real files in a
// temporary folder, real PNG encoding (read back with QImage).
#include "ttrace/ui/models/export_controller.h"

#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QSemaphore>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <optional>
#include <vector>

using namespace ttrace::ui;

namespace {

struct Recorded {
    std::vector<int> steps;
    int startedSteps = -1;
    QString startedFile;
    std::optional<ExportOutcome> outcome;
};

void record(ExportController& exports, Recorded& r) {
    QObject::connect(&exports, &ExportController::started, &exports,
                     [&r](int steps, const QString& first) {
                         r.startedSteps = steps;
                         r.startedFile = first;
                     });
    QObject::connect(&exports, &ExportController::progress, &exports,
                     [&r](int done) { r.steps.push_back(done); });
    QObject::connect(&exports, &ExportController::finished, &exports,
                     [&r](const ExportOutcome& o) { r.outcome = o; });
}

QImage picture() {
    QImage image(64, 32, QImage::Format_ARGB32);
    image.fill(QColor(200, 40, 40));
    image.setPixelColor(3, 5, QColor(10, 220, 30));
    return image;
}

QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class TestExportJob : public QObject {
    Q_OBJECT
private slots:
    void exportRunsAsAJobOffTheGuiThread() {
        QTemporaryDir dir;
        const QString png = dir.filePath("shots/window.png"); // its folder is made
        const QString md = dir.filePath("report.md");
        std::atomic<QThread*> renderedOn{nullptr};
        ExportController exports;
        Recorded r;
        record(exports, r);
        exports.start({pngExport(png, picture()), textExport(md, [&renderedOn] {
                           renderedOn.store(QThread::currentThread());
                           return QStringLiteral("# report ✓\n");
                       })});
        QVERIFY(exports.isRunning());
        QCOMPARE(r.startedSteps, 4);
        QCOMPARE(r.startedFile, png);
        QTRY_VERIFY_WITH_TIMEOUT(r.outcome.has_value(), 10'000);
        QVERIFY(!exports.isRunning());
        QVERIFY(r.outcome->ok());
        QCOMPARE(r.outcome->saved, QStringList({png, md}));
        QCOMPARE(r.steps, std::vector<int>({1, 2, 3, 4}));
        QVERIFY(renderedOn.load() != nullptr);
        QVERIFY(renderedOn.load() != QThread::currentThread());
        const QImage back(png);
        QCOMPARE(back.size(), QSize(64, 32));
        QCOMPARE(back.pixelColor(3, 5), QColor(10, 220, 30));
        QCOMPARE(readAll(md), QStringLiteral("# report ✓\n").toUtf8());
    }

    void writeErrorNamesTheFileAndTheNextIsStillWritten() {
        QTemporaryDir dir;
        QFile blocker(dir.filePath("not-a-folder"));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        const QString bad = dir.filePath("not-a-folder/report.md"); // under a regular file
        const QString good = dir.filePath("report.json");
        ExportController exports;
        Recorded r;
        record(exports, r);
        exports.start({textExport(bad, [] { return QStringLiteral("x"); }),
                       textExport(good, [] { return QStringLiteral("{}"); })});
        QTRY_VERIFY_WITH_TIMEOUT(r.outcome.has_value(), 10'000);
        QVERIFY(!r.outcome->ok());
        QCOMPARE(r.outcome->errors.size(), 1);
        QVERIFY2(r.outcome->errors.front().startsWith(bad + ": "),
                 qPrintable(r.outcome->errors.front()));
        QCOMPARE(r.outcome->saved, QStringList({good}));
        QVERIFY(!QFile::exists(bad));
        QCOMPARE(readAll(good), QByteArray("{}"));
    }

    void bytesThatCannotBeMadeAreReportedByFileName() {
        QTemporaryDir dir;
        const QString png = dir.filePath("empty.png");
        ExportController exports;
        Recorded r;
        record(exports, r);
        exports.start({pngExport(png, QImage())}); // a widget that rendered nothing
        QTRY_VERIFY_WITH_TIMEOUT(r.outcome.has_value(), 10'000);
        QCOMPARE(r.outcome->errors,
                 QStringList({png + QStringLiteral(": the window could not be rendered")}));
        QVERIFY(!QFile::exists(png));
    }

    void cancelStopsBeforeTheNextFile() {
        QTemporaryDir dir;
        const QString first = dir.filePath("first.md");
        const QString second = dir.filePath("second.md");
        QSemaphore rendering;
        QSemaphore proceed;
        ExportController exports;
        Recorded r;
        record(exports, r);
        exports.start({textExport(first,
                                  [&] {
                                      rendering.release();
                                      proceed.tryAcquire(1, 10'000);
                                      return QStringLiteral("first");
                                  }),
                       textExport(second, [] { return QStringLiteral("second"); })});
        QVERIFY(rendering.tryAcquire(1, 10'000)); // the first file is being made
        exports.cancel();
        proceed.release();
        QTRY_VERIFY_WITH_TIMEOUT(r.outcome.has_value(), 10'000);
        QVERIFY(r.outcome->cancelled);
        QCOMPARE(r.outcome->saved, QStringList({first})); // the file under way is finished
        QVERIFY(!QFile::exists(second));
    }

    void aNewExportSupersedesTheRunningOne() {
        QTemporaryDir dir;
        QSemaphore rendering;
        QSemaphore proceed;
        ExportController exports;
        Recorded r;
        record(exports, r);
        exports.start({textExport(dir.filePath("old.md"), [&] {
            rendering.release();
            proceed.tryAcquire(1, 10'000);
            return QStringLiteral("old");
        })});
        QVERIFY(rendering.tryAcquire(1, 10'000));
        exports.start({textExport(dir.filePath("new.md"), [] { return QStringLiteral("new"); })});
        proceed.release();
        QTRY_VERIFY_WITH_TIMEOUT(r.outcome.has_value(), 10'000);
        // Only the new export's outcome is delivered.
        QCOMPARE(r.outcome->saved, QStringList({dir.filePath("new.md")}));
        QTest::qWait(100);
        QCOMPARE(r.outcome->saved, QStringList({dir.filePath("new.md")}));
    }
};

QTEST_MAIN(TestExportJob)
#include "test_export_job.moc"
