#include "ttrace/ui/models/agent_target.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QSettings>

namespace ttrace::ui {
namespace {

// Bundle paths contain '/' which QSettings treats as groups: key by a hash of the path.
QString settingsGroup(const QString& candidateBundle) {
    const QString path = QFileInfo(candidateBundle).absoluteFilePath();
    const auto hash = QCryptographicHash::hash(path.toUtf8(), QCryptographicHash::Sha1).toHex();
    return QStringLiteral("agents/") + QString::fromLatin1(hash);
}

} // namespace

QString AgentTarget::hostPort() const {
    const bool v6 = host.contains(':');
    return (v6 ? QStringLiteral("[%1]:%2") : QStringLiteral("%1:%2")).arg(host).arg(port);
}

bool AgentTarget::parseHostPort(const QString& text, AgentTarget& out) {
    const auto colon = text.lastIndexOf(':');
    if (colon <= 0) {
        return false;
    }
    QString host = text.left(colon);
    if (host.startsWith('[') && host.endsWith(']')) {
        host = host.mid(1, host.size() - 2);
    }
    bool ok = false;
    const int port = text.mid(colon + 1).toInt(&ok);
    if (!ok || port <= 0 || port > 65535 || host.isEmpty()) {
        return false;
    }
    out.host = host;
    out.port = port;
    return true;
}

bool AgentTarget::parseAddress(const QString& text, AgentTarget& out, QString* error) {
    const auto fail = [error](const QString& why) {
        if (error) {
            *error = why;
        }
        return false;
    };
    QString address = text.trimmed();
    if (address.isEmpty()) {
        return fail(QCoreApplication::translate("AgentTarget", "no agent address"));
    }
    const QFileInfo file(address);
    if (file.isFile()) {
        // An endpoint file is tiny (one line); a large file is not one.
        QFile f(file.absoluteFilePath());
        if (file.size() > 4096 || !f.open(QIODevice::ReadOnly)) {
            return fail(
                QCoreApplication::translate("AgentTarget", "%1 is not an agent's endpoint file")
                    .arg(address));
        }
        const QString line = QString::fromUtf8(f.readLine()).trimmed();
        AgentTarget parsed = out;
        QString inner;
        if (!parseAddress(line, parsed, &inner) || QFileInfo(line).isFile()) {
            return fail(QCoreApplication::translate("AgentTarget",
                                                    "%1 does not hold HOST:PORT (it holds '%2')")
                            .arg(address, line.left(80)));
        }
        out = parsed;
        return true;
    }
    if (address.startsWith(QStringLiteral("tcp://"), Qt::CaseInsensitive)) {
        address = address.mid(6);
    }
    if (!parseHostPort(address, out)) {
        return fail(
            QCoreApplication::translate(
                "AgentTarget", "'%1' is neither tcp://HOST:PORT, HOST:PORT nor an endpoint file")
                .arg(text.trimmed()));
    }
    return true;
}

AgentTarget rememberedAgent(const QString& candidateBundle) {
    QSettings settings;
    settings.beginGroup(settingsGroup(candidateBundle));
    AgentTarget t;
    t.host = settings.value(QStringLiteral("host"), t.host).toString();
    t.port = settings.value(QStringLiteral("port"), 0).toInt();
    t.tokenFile = settings.value(QStringLiteral("tokenFile")).toString();
    return t;
}

void rememberAgent(const QString& candidateBundle, const AgentTarget& target) {
    QSettings settings;
    settings.beginGroup(settingsGroup(candidateBundle));
    settings.setValue(QStringLiteral("host"), target.host);
    settings.setValue(QStringLiteral("port"), target.port);
    settings.setValue(QStringLiteral("tokenFile"), target.tokenFile);
    settings.setValue(QStringLiteral("bundle"), QFileInfo(candidateBundle).absoluteFilePath());
}

} // namespace ttrace::ui
