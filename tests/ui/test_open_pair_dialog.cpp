// The Open dialog checks both folders before anything loads: a folder that is not a bundle is
// named with its problem and Open stays disabled; a swapped pair is said so with Swap; pairs
// that opened before fill both fields. Exports default next to the bundles with a timestamped
// name. Real demo bundles (the ui_demo_bundles fixture) and real folders.
#include "ttrace/ui/models/export_path.h"
#include "ttrace/ui/open_pair_dialog.h"

#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

using ttrace::ui::BundlePair;
using ttrace::ui::OpenPairDialog;

namespace {

QString demo(const char* side) {
    return QDir(qEnvironmentVariable("TTRACE_DEMO_DIR")).filePath(QString::fromLatin1(side));
}

} // namespace

class TestOpenPairDialog : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY2(QDir(demo("reference")).exists(), "TTRACE_DEMO_DIR has no demo bundles");
    }

    void bothBundlesOpen() {
        OpenPairDialog dialog({demo("reference"), demo("candidate")}, {});
        QVERIFY(dialog.openButton()->isEnabled());
        QVERIFY(dialog.referenceStatus()->text().startsWith("reference bundle · 1 rank"));
        QVERIFY(dialog.candidateStatus()->text().startsWith("candidate bundle · 4 ranks"));
        QVERIFY(dialog.pairStatus()->text().isEmpty());
        QVERIFY(dialog.swapButton()->isHidden());
        QCOMPARE(dialog.pair().candidate, QFileInfo(demo("candidate")).absoluteFilePath());
    }

    void aFolderThatIsNotABundleIsNamed() {
        QTemporaryDir empty;
        OpenPairDialog dialog({demo("reference"), empty.path()}, {});
        QVERIFY(!dialog.openButton()->isEnabled());
        QVERIFY2(dialog.candidateStatus()->text().contains("manifest.json"),
                 qPrintable(dialog.candidateStatus()->text()));
        dialog.candidateEdit()->setText(empty.filePath("nowhere"));
        QVERIFY(dialog.candidateStatus()->text().contains("is not a folder"));
        dialog.candidateEdit()->setText(demo("candidate")); // fixed as it is typed
        QVERIFY(dialog.openButton()->isEnabled());
    }

    void aSwappedPairIsSaidAndSwapped() {
        OpenPairDialog dialog({demo("candidate"), demo("reference")}, {});
        QVERIFY(dialog.openButton()->isEnabled()); // it opens; the explorer then refuses it
        QVERIFY(dialog.pairStatus()->text().contains("swapped"));
        QVERIFY(!dialog.swapButton()->isHidden());
        dialog.swapButton()->click();
        QCOMPARE(dialog.referenceEdit()->text(), demo("reference"));
        QVERIFY(dialog.pairStatus()->text().isEmpty());
        OpenPairDialog twice({demo("reference"), demo("reference")}, {});
        QVERIFY(twice.pairStatus()->text().contains("the same bundle twice"));
    }

    void recentPairsFillBothFields() {
        const QList<BundlePair> recent{{demo("reference"), demo("candidate")}};
        OpenPairDialog dialog({}, recent);
        QVERIFY(!dialog.openButton()->isEnabled());
        QCOMPARE(dialog.recentList()->count(), 1);
        emit dialog.recentList()->itemActivated(dialog.recentList()->item(0));
        QCOMPARE(dialog.referenceEdit()->text(), demo("reference"));
        QCOMPARE(dialog.candidateEdit()->text(), demo("candidate"));
        QVERIFY(dialog.openButton()->isEnabled());
        OpenPairDialog none({}, {});
        QVERIFY(none.recentList()->isHidden());
    }

    void exportsGoNextToTheBundles() {
        const QDateTime when(QDate(2026, 11, 26), QTime(9, 5, 7));
        const auto path =
            ttrace::ui::defaultExportPath(demo("candidate"), "Drill down", "png", when);
        QCOMPARE(QFileInfo(path).absolutePath(),
                 QFileInfo(demo("candidate")).absoluteDir().absolutePath());
        QCOMPARE(QFileInfo(path).fileName(), QString("ttrace-drill-down-20261126-090507.png"));
        QCOMPARE(QFileInfo(ttrace::ui::defaultExportPath({}, "report", "md", when)).absolutePath(),
                 QDir::homePath());
    }
};

QTEST_MAIN(TestOpenPairDialog)
#include "test_open_pair_dialog.moc"
