#include "ttrace/ui/models/ssh_target.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>

namespace ttrace::ui {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("SshTarget", text);
}

// Never a prompt (the explorer has no terminal to show it in: keys, an agent or a connection
// already open through the user's ControlMaster log in), and no forwarding from the user's
// config on the connection that runs the agent.
const QStringList kBatch{QStringLiteral("-T"), QStringLiteral("-o"),
                         QStringLiteral("BatchMode=yes")};

QString bracketed(const QString& host) {
    return host.contains(':') && !host.startsWith('[') ? '[' + host + ']' : host;
}

} // namespace

QString shellQuote(const QString& word) {
    if (word.startsWith(QStringLiteral("~/"))) {
        return QStringLiteral("~/") + shellQuote(word.mid(2));
    }
    QString quoted = word;
    quoted.replace('\'', QStringLiteral("'\\''"));
    return '\'' + quoted + '\'';
}

QString SshTarget::problem() const {
    if (destination.trimmed().isEmpty()) {
        return tr("Enter the GPU host as user@host or an alias from your ssh config.");
    }
    // A destination starting with '-' would be read by ssh as an option.
    if (destination.trimmed().startsWith('-') || destination.contains(QRegularExpression("\\s"))) {
        return tr("'%1' is not an ssh destination.").arg(destination);
    }
    if (reference.trimmed().isEmpty() || candidate.trimmed().isEmpty()) {
        return tr("Enter the paths of both bundles on the host.");
    }
    if (ttrace.trimmed().isEmpty()) {
        return tr("Enter the command that runs ttrace on the host.");
    }
    if (!sshOptions.trimmed().isEmpty() && QProcess::splitCommand(sshOptions).isEmpty()) {
        return tr("The ssh options cannot be read (an unclosed quote?).");
    }
    return {};
}

QString SshTarget::remoteCommand(const QStringList& serveOptions) const {
    QStringList words{ttrace.trimmed(),
                      QStringLiteral("serve"),
                      QStringLiteral("--reference"),
                      shellQuote(reference.trimmed()),
                      QStringLiteral("--candidate"),
                      shellQuote(candidate.trimmed())};
    if (!codeFolder.trimmed().isEmpty()) {
        words << QStringLiteral("--cwd") << shellQuote(codeFolder.trimmed());
    }
    for (const QString& option : serveOptions) {
        words << shellQuote(option);
    }
    return words.join(' ');
}

QStringList SshTarget::planArguments() const {
    return QProcess::splitCommand(sshOptions) + kBatch +
           QStringList{QStringLiteral("-o"), QStringLiteral("ClearAllForwardings=yes"),
                       QStringLiteral("--"), destination.trimmed(),
                       remoteCommand({QStringLiteral("--print-plan")})};
}

QStringList SshTarget::serveArguments(const QString& planDigest) const {
    return QProcess::splitCommand(sshOptions) + kBatch +
           QStringList{QStringLiteral("-o"), QStringLiteral("ClearAllForwardings=yes"),
                       QStringLiteral("--"), destination.trimmed(),
                       remoteCommand({QStringLiteral("--stdio"), QStringLiteral("--plan-digest"),
                                      planDigest})};
}

QStringList SshTarget::tunnelArguments(int localPort, const QString& agentHost,
                                       int agentPort) const {
    // Bound to 127.0.0.1 explicitly: whatever the user's config says of GatewayPorts, nothing
    // listens beyond loopback here; the agent listens on the host's loopback only.
    const QString forward = QStringLiteral("127.0.0.1:%1:%2:%3")
                                .arg(localPort)
                                .arg(bracketed(agentHost))
                                .arg(agentPort);
    return QProcess::splitCommand(sshOptions) + kBatch +
           QStringList{QStringLiteral("-N"),
                       QStringLiteral("-o"),
                       QStringLiteral("ExitOnForwardFailure=yes"),
                       QStringLiteral("-L"),
                       forward,
                       QStringLiteral("--"),
                       destination.trimmed()};
}

namespace {

// The host's paths of one shown pair, keyed by the candidate bundle shown here.
QString pathsGroup(const QString& shownCandidate) {
    const QByteArray key =
        QCryptographicHash::hash(shownCandidate.toUtf8(), QCryptographicHash::Sha1)
            .toHex()
            .left(16);
    return QStringLiteral("sshAgent/paths/") + QString::fromLatin1(key);
}

} // namespace

SshTarget rememberedSshTarget(const QString& shownReference, const QString& shownCandidate) {
    QSettings s;
    SshTarget t;
    s.beginGroup(QStringLiteral("sshAgent"));
    t.destination = s.value(QStringLiteral("destination")).toString();
    t.codeFolder = s.value(QStringLiteral("codeFolder")).toString();
    t.ttrace = s.value(QStringLiteral("ttrace"), t.ttrace).toString();
    t.sshOptions = s.value(QStringLiteral("sshOptions")).toString();
    s.endGroup();
    // By default the same paths as here (a shared file system, or the same layout).
    s.beginGroup(pathsGroup(shownCandidate));
    t.reference = s.value(QStringLiteral("reference"), shownReference).toString();
    t.candidate = s.value(QStringLiteral("candidate"), shownCandidate).toString();
    return t;
}

void rememberSshTarget(const SshTarget& t, const QString& shownCandidate) {
    QSettings s;
    s.beginGroup(QStringLiteral("sshAgent"));
    s.setValue(QStringLiteral("destination"), t.destination);
    s.setValue(QStringLiteral("codeFolder"), t.codeFolder);
    s.setValue(QStringLiteral("ttrace"), t.ttrace);
    s.setValue(QStringLiteral("sshOptions"), t.sshOptions);
    s.endGroup();
    s.beginGroup(pathsGroup(shownCandidate));
    s.setValue(QStringLiteral("reference"), t.reference);
    s.setValue(QStringLiteral("candidate"), t.candidate);
}

} // namespace ttrace::ui
