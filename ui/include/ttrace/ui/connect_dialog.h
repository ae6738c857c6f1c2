#pragma once
// "Connect to Agent": host, port and token file of a localize agent (docs/localize.md tells
// where a job writes them). Prefilled with what was used last with the open candidate bundle.
#include "ttrace/ui/models/agent_target.h"

#include <QDialog>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace ttrace::ui {

class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    explicit ConnectDialog(const AgentTarget& initial, QWidget* parent = nullptr);

    [[nodiscard]] AgentTarget target() const;
    [[nodiscard]] QLineEdit* hostEdit() const { return host_; }
    [[nodiscard]] QSpinBox* portBox() const { return port_; }
    [[nodiscard]] QLineEdit* tokenEdit() const { return token_; }
    [[nodiscard]] QDialogButtonBox* buttons() const { return buttons_; }

private:
    void validate();

    QLineEdit* host_;
    QSpinBox* port_;
    QLineEdit* token_;
    QLabel* hint_;
    QDialogButtonBox* buttons_;
};

} // namespace ttrace::ui
