#pragma once
// The status-bar indicator of the agent connection: a coloured dot and one line (disconnected /
// connected to HOST:PORT, agent version, ranks, layout / busy), with a Reconnect button.
#include <QWidget>

class QLabel;
class QToolButton;

namespace ttrace::ui {

class AgentSession;

class AgentStatusWidget : public QWidget {
    Q_OBJECT
public:
    explicit AgentStatusWidget(AgentSession* session, QWidget* parent = nullptr);

    [[nodiscard]] QString text() const;
    [[nodiscard]] QToolButton* reconnectButton() const { return reconnect_; }

private:
    void refresh();

    AgentSession* session_;
    QLabel* dot_;
    QLabel* label_;
    QToolButton* reconnect_;
};

} // namespace ttrace::ui
