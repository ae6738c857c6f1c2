#pragma once
// Where the explorer finds a localize agent: HOST:PORT and the token file. Remembered per
// candidate bundle in the settings, so reopening a bundle offers the agent that served it.
#include <QString>

namespace ttrace::ui {

struct AgentTarget {
    QString host = QStringLiteral("127.0.0.1");
    int port = 0;
    QString tokenFile;
    // The token itself, when it came over a channel instead of a file (an agent started over
    // ssh): kept in memory only, never remembered.
    QString token;

    [[nodiscard]] QString hostPort() const;
    [[nodiscard]] bool isComplete() const {
        return !host.isEmpty() && port > 0 && (!tokenFile.isEmpty() || !token.isEmpty());
    }
    // "HOST:PORT" or "[V6]:PORT"; false when it is not of that form.
    static bool parseHostPort(const QString& text, AgentTarget& out);
    // What an agent prints or writes: "tcp://HOST:PORT" (its log line), "HOST:PORT", or the
    // path of its endpoint file (--endpoint-file, holding HOST:PORT). On failure returns false
    // and says why in `error`; `out`'s host and port are set only on success.
    static bool parseAddress(const QString& text, AgentTarget& out, QString* error = nullptr);
    bool operator==(const AgentTarget&) const = default;
};

// The target last used with this candidate bundle (an empty target when none).
AgentTarget rememberedAgent(const QString& candidateBundle);
void rememberAgent(const QString& candidateBundle, const AgentTarget& target);

} // namespace ttrace::ui
