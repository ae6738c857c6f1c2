#pragma once
// Where "Connect to GPU host" starts `ttrace serve`: an ssh destination (user@host, or any
// Host alias of the user's own ssh config, jump hosts included: the explorer runs the user's
// `ssh` with their config), the bundles' paths there, and how to run ttrace there. The last one
// used is remembered in the settings.
#include <QString>
#include <QStringList>

namespace ttrace::ui {

struct SshTarget {
    QString destination; // user@host or a Host alias
    QString reference;   // the bundles' paths on that host
    QString candidate;
    QString codeFolder; // `ttrace serve --cwd`; empty: the folder the job ran in
    QString ttrace = QStringLiteral("ttrace"); // the command that runs ttrace there, as typed
    QString sshOptions; // extra options: "-J login -p 2222" (double quotes group words)

    // Empty when the target can be tried, else what is missing or wrong.
    [[nodiscard]] QString problem() const;

    // ssh's arguments (the program is the user's ssh): their options first, so that they can
    // override the explorer's (ssh keeps the first value of an option), then the explorer's,
    // the destination, and the remote command.
    [[nodiscard]] QStringList planArguments() const;
    [[nodiscard]] QStringList serveArguments(const QString& planDigest) const;
    // `ssh -L` from 127.0.0.1:localPort to the agent's loopback address on the host.
    [[nodiscard]] QStringList tunnelArguments(int localPort, const QString& agentHost,
                                              int agentPort) const;
    // The remote shell command line: `<ttrace> serve --reference '...' --candidate '...' ...`.
    [[nodiscard]] QString remoteCommand(const QStringList& serveOptions) const;

    bool operator==(const SshTarget&) const = default;
};

// One word for a POSIX shell, in single quotes; a leading "~/" stays unquoted so that the
// remote shell expands it to the home folder there.
QString shellQuote(const QString& word);

// The host, options and ttrace command used last; the host's paths used last with the shown
// candidate, by default the shown paths themselves.
SshTarget rememberedSshTarget(const QString& shownReference, const QString& shownCandidate);
void rememberSshTarget(const SshTarget& target, const QString& shownCandidate);

} // namespace ttrace::ui
