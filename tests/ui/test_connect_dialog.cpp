// Connect takes what an agent prints or writes: its log line's tcp://HOST:PORT, HOST:PORT, or
// the endpoint file it wrote (a real file here); it guesses no port, names what is wrong with
// an address, and its labels' mnemonics work (no literal '&').
#include "ttrace/ui/connect_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

using ttrace::ui::AgentTarget;
using ttrace::ui::ConnectDialog;

namespace {

bool writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

} // namespace

class TestConnectDialog : public QObject {
    Q_OBJECT
private slots:
    void addressForms_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::newRow("log line") << "tcp://127.0.0.1:41733"
                                  << "127.0.0.1" << 41733;
        QTest::newRow("host:port") << "gpu-07:5601"
                                   << "gpu-07" << 5601;
        QTest::newRow("spaces") << "  tcp://10.0.0.7:80 "
                                << "10.0.0.7" << 80;
        QTest::newRow("ipv6") << "tcp://[::1]:6000"
                              << "::1" << 6000;
    }
    void addressForms() {
        QFETCH(QString, text);
        QFETCH(QString, host);
        QFETCH(int, port);
        AgentTarget t;
        QString why;
        QVERIFY2(AgentTarget::parseAddress(text, t, &why), qPrintable(why));
        QCOMPARE(t.host, host);
        QCOMPARE(t.port, port);
    }
    void endpointFile() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        // What the agent writes with --endpoint-file.
        const QString endpoint = dir.filePath("endpoint");
        QVERIFY(writeFile(endpoint, "127.0.0.1:40211\n"));
        AgentTarget t;
        QString why;
        QVERIFY2(AgentTarget::parseAddress(endpoint, t, &why), qPrintable(why));
        QCOMPARE(t.host, QStringLiteral("127.0.0.1"));
        QCOMPARE(t.port, 40211);
        const QString other = dir.filePath("notes.txt");
        QVERIFY(writeFile(other, "hello\n"));
        QVERIFY(!AgentTarget::parseAddress(other, t, &why));
        QVERIFY2(why.contains(other) && why.contains("HOST:PORT"), qPrintable(why));
    }
    void badAddressesSayWhy_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("empty") << "";
        QTest::newRow("no port") << "tcp://127.0.0.1";
        QTest::newRow("port 0") << "127.0.0.1:0";
        QTest::newRow("port too big") << "127.0.0.1:70000";
        QTest::newRow("no such file") << "/nonexistent/endpoint";
    }
    void badAddressesSayWhy() {
        QFETCH(QString, text);
        AgentTarget t;
        t.port = 0;
        QString why;
        QVERIFY(!AgentTarget::parseAddress(text, t, &why));
        QVERIFY(!why.isEmpty());
        QCOMPARE(t.port, 0);
    }
    void dialogTakesTheLogLine() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString token = dir.filePath("token");
        QVERIFY(writeFile(token, "secret\n"));
        ConnectDialog dialog{AgentTarget{}};
        // No stale default port: the address starts empty and OK waits for one.
        QVERIFY(dialog.addressEdit()->text().isEmpty());
        auto* ok = dialog.buttons()->button(QDialogButtonBox::Ok);
        QVERIFY(!ok->isEnabled());
        dialog.addressEdit()->setText("tcp://127.0.0.1:41733");
        dialog.tokenEdit()->setText(token);
        QVERIFY(ok->isEnabled());
        QVERIFY(dialog.hintLabel()->text().isEmpty());
        const AgentTarget t = dialog.target();
        QCOMPARE(t.hostPort(), QStringLiteral("127.0.0.1:41733"));
        QCOMPARE(t.tokenFile, token);
        // A bad address is named in the dialog, not in a cut-off status-bar message later.
        dialog.addressEdit()->setText("tcp://127.0.0.1");
        QVERIFY(!ok->isEnabled());
        QVERIFY2(dialog.hintLabel()->text().contains("tcp://127.0.0.1"),
                 qPrintable(dialog.hintLabel()->text()));
        // Labels have working mnemonics: their buddies are the fields, no '&' is shown.
        for (const auto* label : dialog.findChildren<QLabel*>()) {
            if (label->text().contains("Token file")) {
                QCOMPARE(label->buddy(), static_cast<QWidget*>(dialog.tokenEdit()));
            }
            if (label->text().contains("Agent:")) {
                QCOMPARE(label->buddy(), static_cast<QWidget*>(dialog.addressEdit()));
            }
        }
        // A remembered target is offered as it was.
        AgentTarget remembered;
        remembered.host = "gpu-07";
        remembered.port = 5601;
        remembered.tokenFile = token;
        ConnectDialog again(remembered);
        QCOMPARE(again.addressEdit()->text(), QStringLiteral("gpu-07:5601"));
        QCOMPARE(again.target(), remembered);
    }
};

QTEST_MAIN(TestConnectDialog)
#include "test_connect_dialog.moc"
