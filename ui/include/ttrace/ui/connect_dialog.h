#pragma once
// "Connect to Agent": the agent's address and token file (docs/localize.md tells where a job
// writes them). The address takes what the agent prints or writes: tcp://HOST:PORT, HOST:PORT
// or its endpoint file. Prefilled with what was used last with the open candidate bundle; no
// port is guessed (agents pick a free one).
#include "ttrace/ui/models/agent_target.h"

#include <QDialog>

class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace ttrace::ui {

class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    explicit ConnectDialog(const AgentTarget& initial, QWidget* parent = nullptr);

    // The target as entered (host and port parsed from the address; port 0 when it does not
    // parse).
    [[nodiscard]] AgentTarget target() const;
    [[nodiscard]] QLineEdit* addressEdit() const { return address_; }
    [[nodiscard]] QLineEdit* tokenEdit() const { return token_; }
    [[nodiscard]] QLabel* hintLabel() const { return hint_; }
    [[nodiscard]] QDialogButtonBox* buttons() const { return buttons_; }

private:
    void validate();

    QLineEdit* address_;
    QLineEdit* token_;
    QLabel* hint_;
    QDialogButtonBox* buttons_;
};

} // namespace ttrace::ui
