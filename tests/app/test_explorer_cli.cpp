// The command line: `ttrace-explorer --screenshot FILE --markdown FILE REF CAND` writes both,
// prints their paths and the verdict, and exits as `ttrace diff` does: 1 for the demo's
// divergence; a broken bundle exits 2 with the problem on stderr.
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

class TestExplorerCli : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        explorer_ = qEnvironmentVariable("TTRACE_EXPLORER");
        QVERIFY2(QFile::exists(explorer_), qPrintable(explorer_));
    }
    void screenshotAndReport() {
        QTemporaryDir dir;
        const QString demo = qEnvironmentVariable("TTRACE_DEMO_DIR");
        const QString png = dir.filePath("shot.png");
        const QString md = dir.filePath("report.md");
        QProcess p;
        p.start(explorer_,
                {"--screenshot", png, "--markdown", md, demo + "/reference", demo + "/candidate"});
        QVERIFY(p.waitForFinished(120000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(p.exitCode() == 1, qPrintable(out + p.readAllStandardError()));
        QVERIFY2(out.contains("divergent"), qPrintable(out));
        QVERIFY2(out.contains(png), qPrintable(out));
        QVERIFY(out.contains(md));
        const QImage image(png);
        QCOMPARE(image.size(), QSize(1600, 1000));
        QFile report(md);
        QVERIFY(report.open(QIODevice::ReadOnly));
        QVERIFY(report.readAll().contains("layers.1.mlp.fc2"));
    }
    void brokenBundleExitsTwo() {
        QTemporaryDir dir;
        const QString fixtures = qEnvironmentVariable("TTRACE_FIXTURES_DIR");
        QProcess p;
        p.start(explorer_, {"--screenshot", dir.filePath("shot.png"), fixtures + "/valid-reference",
                            fixtures + "/broken/missing-rank-file"});
        QVERIFY(p.waitForFinished(120000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 2);
        QVERIFY2(err.contains("rank-00001.h5"), qPrintable(err));
    }
    void needsBothBundles() {
        QProcess p;
        p.start(explorer_, {"--screenshot", "x.png", "only-one"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
    }

private:
    QString explorer_;
};

QTEST_GUILESS_MAIN(TestExplorerCli)
#include "test_explorer_cli.moc"
