#include "ttrace/ui/connect_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace ttrace::ui {

ConnectDialog::ConnectDialog(const AgentTarget& initial, QWidget* parent)
    : QDialog(parent)
    , host_(new QLineEdit(initial.host, this))
    , port_(new QSpinBox(this))
    , token_(new QLineEdit(initial.tokenFile, this))
    , hint_(new QLabel(this))
    , buttons_(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this)) {
    setWindowTitle(tr("Connect to Localize Agent"));
    setObjectName(QStringLiteral("connectDialog"));
    host_->setObjectName(QStringLiteral("agentHost"));
    port_->setObjectName(QStringLiteral("agentPort"));
    token_->setObjectName(QStringLiteral("agentTokenFile"));
    port_->setRange(1, 65535);
    port_->setValue(initial.port > 0 ? initial.port : 5555);
    auto* browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const auto file = QFileDialog::getOpenFileName(this, tr("Agent token file"),
                                                       QFileInfo(token_->text()).absolutePath());
        if (!file.isEmpty()) {
            token_->setText(file);
        }
    });
    auto* tokenRow = new QHBoxLayout;
    tokenRow->addWidget(token_, 1);
    tokenRow->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("&Host:"), host_);
    form->addRow(tr("&Port:"), port_);
    form->addRow(tr("&Token file:"), tokenRow);
    hint_->setWordWrap(true);
    hint_->setStyleSheet(QStringLiteral("color: #4b5563;"));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(hint_);
    layout->addWidget(buttons_);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(host_, &QLineEdit::textChanged, this, &ConnectDialog::validate);
    connect(token_, &QLineEdit::textChanged, this, &ConnectDialog::validate);
    validate();
    resize(520, sizeHint().height());
}

AgentTarget ConnectDialog::target() const {
    AgentTarget t;
    t.host = host_->text().trimmed();
    t.port = port_->value();
    t.tokenFile = token_->text().trimmed();
    return t;
}

void ConnectDialog::validate() {
    const AgentTarget t = target();
    QString hint;
    if (t.host.isEmpty()) {
        hint = tr("The host the agent listens on (127.0.0.1 through an SSH tunnel).");
    } else if (t.tokenFile.isEmpty()) {
        hint = tr("The token file the agent wrote when it started (see its log line).");
    } else if (!QFileInfo(t.tokenFile).isFile()) {
        hint = tr("%1 does not exist.").arg(t.tokenFile);
    }
    hint_->setText(hint);
    hint_->setVisible(!hint.isEmpty());
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(t.isComplete());
}

} // namespace ttrace::ui
