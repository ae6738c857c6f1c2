// Data-driven: every corrupt fixture bundle yields its own clear message (never a crash).
// The fixtures and the expected phrases are written by `python -m ttrace_testing.fixtures`.
#include "ttrace/merge/validator.h"

#include "broken_fixture_cases.h"

#include <QtTest>

using namespace ttrace;

class TestBrokenBundles : public QObject {
    Q_OBJECT
private slots:
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
        const auto report = validateBundle(dir.toStdString());
        QString all;
        const Diagnostic* found = nullptr;
        for (const auto& d : report.diagnostics) {
            const auto text = QString::fromStdString(d.toString());
            all += text + "\n";
            if (!found && text.contains(expected)) {
                found = &d;
            }
        }
        QVERIFY2(found, qPrintable("expected '" + expected + "' in:\n" + all));
        if (found->code == "replica-disagree") {
            // Disagreeing replicas are recorded faithfully: the bundle is valid, the run is
            // suspect. Reported as a warning that names the ranks.
            QCOMPARE(found->severity, Severity::Warning);
            QVERIFY(found->message.find("ranks 0 and 1") != std::string::npos);
        } else {
            QCOMPARE(found->severity, Severity::Error);
            QVERIFY2(!report.ok(), qPrintable(dir + " validated but is broken"));
        }
    }
    void validBundlePasses() {
        const QString dir = qEnvironmentVariable("TTRACE_FIXTURES_DIR") + "/roundtrip";
        const auto report = validateBundle(dir.toStdString());
        QString all;
        for (const auto& d : report.diagnostics) {
            all += QString::fromStdString(d.toString()) + "\n";
        }
        QVERIFY2(report.ok(), qPrintable(all));
        QVERIFY(report.summary.logicalTensors > 10);
        QCOMPARE(report.summary.worldSize, 4);
    }
    void cancellationStopsValidation() {
        const QString dir = qEnvironmentVariable("TTRACE_FIXTURES_DIR") + "/roundtrip";
        int calls = 0;
        const auto report = validateBundle(dir.toStdString(), {},
                                           [&](double, std::string_view) { return ++calls < 3; });
        QVERIFY(report.cancelled);
        QVERIFY(!report.ok());
    }
};

QTEST_APPLESS_MAIN(TestBrokenBundles)
#include "test_broken_bundles.moc"
