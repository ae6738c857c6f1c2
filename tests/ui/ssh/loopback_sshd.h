#pragma once
// A real OpenSSH server for the explorer's "Connect to GPU Host" test: Debian's sshd run by the
// test itself on a free loopback port, with a throwaway config, host key and client key in a
// temporary folder (the system's sshd and its config are never touched). The client side is a
// throwaway ssh_config with two Host aliases: `gpu-login`, and `gpu-node` reached through it
// with ProxyJump, as a compute node behind a cluster's login node.
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <memory>

class LoopbackSshd {
public:
    // `environment`: what sshd sets in sessions (SetEnv), as a login environment would.
    explicit LoopbackSshd(const QStringList& environment);
    ~LoopbackSshd();

    // Empty when sshd serves, else what went wrong.
    [[nodiscard]] const QString& error() const { return error_; }
    [[nodiscard]] QString clientConfig() const { return dir_.filePath("ssh_config"); }
    [[nodiscard]] int port() const { return port_; }
    [[nodiscard]] QString path(const QString& name) const { return dir_.filePath(name); }

private:
    bool run(const QString& program, const QStringList& arguments);
    bool writeFile(const QString& name, const QByteArray& text);
    bool start(const QStringList& environment);

    QTemporaryDir dir_;
    QProcess sshd_;
    int port_ = 0;
    QString error_;
};
