#include "ttrace/ui/agent_status_widget.h"

#include "ttrace/ui/models/agent_session.h"
#include "ttrace/ui/models/code_changes_text.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace ttrace::ui {

AgentStatusWidget::AgentStatusWidget(AgentSession* session, QWidget* parent)
    : QWidget(parent)
    , session_(session)
    , dot_(new QLabel(this))
    , label_(new QLabel(this))
    , reconnect_(new QToolButton(this)) {
    setObjectName(QStringLiteral("agentStatus"));
    label_->setObjectName(QStringLiteral("agentStatusText"));
    dot_->setFixedSize(10, 10);
    reconnect_->setText(tr("Reconnect"));
    reconnect_->setAutoRaise(true);
    reconnect_->setObjectName(QStringLiteral("agentReconnect"));
    connect(reconnect_, &QToolButton::clicked, session_, &AgentSession::reconnect);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(4, 0, 4, 0);
    layout->setSpacing(6);
    layout->addWidget(dot_);
    layout->addWidget(label_);
    layout->addWidget(reconnect_);
    connect(session_, &AgentSession::stateChanged, this, &AgentStatusWidget::refresh);
    refresh();
}

QString AgentStatusWidget::text() const {
    return label_->text();
}

void AgentStatusWidget::refresh() {
    using State = AgentSession::State;
    const State state = session_->state();
    QColor color(0x9ca3af);
    if (state == State::Connected) {
        color = session_->busy() ? QColor(0x2563eb) : QColor(0x16a34a);
    } else if (state == State::Failed) {
        color = QColor(0xdc2626);
    } else if (state == State::Connecting) {
        color = QColor(0xf59e0b);
    }
    dot_->setStyleSheet(QStringLiteral("background: %1; border-radius: 5px;").arg(color.name()));
    QString text = session_->statusText();
    // The code the agent runs, file by file, where the status line has room for a count only.
    const auto* info = session_->info();
    const QString code = info ? codeChangesDetail(*info) : QString();
    label_->setToolTip(code.isEmpty() ? text : text + QStringLiteral("\n") + code);
    if (text.size() > 90) {
        text = text.left(89) + QStringLiteral("…");
    }
    label_->setText(text);
    reconnect_->setVisible(state == State::Failed ||
                           (state == State::Connected && !session_->busy()));
    reconnect_->setEnabled(session_->target().isComplete());
}

} // namespace ttrace::ui
