#include "loopback_sshd.h"

#include <QDir>
#include <QFile>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>

#include <unistd.h>

namespace {

int freePort() {
    QTcpServer server;
    return server.listen(QHostAddress::LocalHost, 0) ? server.serverPort() : 0;
}

QString userName() {
    const QString user = qEnvironmentVariable("USER");
    return user.isEmpty() ? (::geteuid() == 0 ? QStringLiteral("root") : QString()) : user;
}

} // namespace

LoopbackSshd::LoopbackSshd(const QStringList& environment) {
    if (!dir_.isValid()) {
        error_ = QStringLiteral("no temporary folder");
        return;
    }
    if (!QFile::exists(QStringLiteral("/usr/sbin/sshd"))) {
        error_ = QStringLiteral("/usr/sbin/sshd is missing: install openssh-server "
                                "(scripts/setup.sh lists it)");
        return;
    }
    start(environment);
}

LoopbackSshd::~LoopbackSshd() {
    if (sshd_.state() != QProcess::NotRunning) {
        sshd_.terminate();
        if (!sshd_.waitForFinished(5000)) {
            sshd_.kill();
            sshd_.waitForFinished(5000);
        }
    }
}

bool LoopbackSshd::run(const QString& program, const QStringList& arguments) {
    QProcess p;
    p.start(program, arguments);
    if (!p.waitForFinished(30000) || p.exitCode() != 0) {
        error_ = program + ' ' + arguments.join(' ') + ": " + p.readAllStandardError();
        return false;
    }
    return true;
}

bool LoopbackSshd::writeFile(const QString& name, const QByteArray& text) {
    QFile f(dir_.filePath(name));
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) {
        error_ = QStringLiteral("cannot write ") + f.fileName();
        return false;
    }
    f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    return true;
}

bool LoopbackSshd::start(const QStringList& environment) {
    for (const char* key : {"host_key", "user_key"}) {
        if (!run(QStringLiteral("ssh-keygen"), {"-q", "-t", "ed25519", "-N", "", "-f",
                                                dir_.filePath(QString::fromLatin1(key))})) {
            return false;
        }
    }
    // sshd started by root checks for its privilege separation folder (the system's unit
    // creates it at boot; a container may lack it).
    if (::geteuid() == 0 && !QDir(QStringLiteral("/run/sshd")).exists() &&
        !QDir().mkpath(QStringLiteral("/run/sshd"))) {
        error_ = QStringLiteral("cannot create /run/sshd");
        return false;
    }
    port_ = freePort();
    QFile userKey(dir_.filePath("user_key.pub"));
    QFile hostKey(dir_.filePath("host_key.pub"));
    if (!userKey.open(QIODevice::ReadOnly) || !hostKey.open(QIODevice::ReadOnly)) {
        error_ = QStringLiteral("ssh-keygen wrote no public keys");
        return false;
    }
    const QByteArray hostLine = hostKey.readAll().trimmed();
    const QString d = dir_.path();
    QByteArray server =
        QStringLiteral("ListenAddress 127.0.0.1\nHostKey %1/host_key\n"
                       "AuthorizedKeysFile %1/authorized_keys\nPidFile %1/sshd.pid\n"
                       "UsePAM no\nStrictModes no\nPasswordAuthentication no\n"
                       "KbdInteractiveAuthentication no\n"
                       "PermitRootLogin prohibit-password\n"
                       "AllowTcpForwarding local\nX11Forwarding no\nLogLevel ERROR\n")
            .arg(d)
            .toUtf8();
    if (!environment.isEmpty()) {
        server += "SetEnv " + environment.join(' ').toUtf8() + '\n';
    }
    const QByteArray client =
        QStringLiteral("Host gpu-login gpu-node\n  HostName 127.0.0.1\n  Port %1\n  User %2\n"
                       "  IdentityFile %3/user_key\n  IdentitiesOnly yes\n"
                       "  UserKnownHostsFile %3/known_hosts\n  StrictHostKeyChecking yes\n"
                       "  ControlMaster no\nHost gpu-node\n  ProxyJump gpu-login\n")
            .arg(port_)
            .arg(userName(), d)
            .toUtf8();
    if (!writeFile("authorized_keys", userKey.readAll()) || !writeFile("sshd_config", server) ||
        !writeFile("ssh_config", client) ||
        !writeFile("known_hosts",
                   QStringLiteral("[127.0.0.1]:%1 ").arg(port_).toUtf8() + hostLine + '\n')) {
        return false;
    }
    sshd_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    sshd_.start(QStringLiteral("/usr/sbin/sshd"),
                {"-D", "-e", "-f", dir_.filePath("sshd_config"), "-p", QString::number(port_)});
    for (int i = 0; i < 100; ++i) {
        QTcpSocket probe;
        probe.connectToHost(QHostAddress::LocalHost, static_cast<quint16>(port_));
        if (probe.waitForConnected(100)) {
            return true;
        }
        if (sshd_.state() == QProcess::NotRunning) {
            break;
        }
        QThread::msleep(100);
    }
    error_ = QStringLiteral("sshd did not start on port %1").arg(port_);
    return false;
}
