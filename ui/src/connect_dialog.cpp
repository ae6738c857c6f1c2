#include "ttrace/ui/connect_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace ttrace::ui {
namespace {

// A row of a line edit and a "Browse…" button that fills it with a chosen file.
QHBoxLayout* withBrowse(QLineEdit* edit, const QString& title, QWidget* parent) {
    auto* browse = new QPushButton(ConnectDialog::tr("Browse…"), parent);
    QObject::connect(browse, &QPushButton::clicked, parent, [edit, title, parent] {
        const auto file =
            QFileDialog::getOpenFileName(parent, title, QFileInfo(edit->text()).absolutePath());
        if (!file.isEmpty()) {
            edit->setText(file);
        }
    });
    auto* row = new QHBoxLayout;
    row->addWidget(edit, 1);
    row->addWidget(browse);
    return row;
}

// A form label whose mnemonic focuses `buddy` (a row holding a layout gets no buddy by itself,
// and would show the '&' literally).
QLabel* labelFor(const QString& text, QWidget* buddy, QWidget* parent) {
    auto* label = new QLabel(text, parent);
    label->setBuddy(buddy);
    return label;
}

} // namespace

ConnectDialog::ConnectDialog(const AgentTarget& initial, QWidget* parent)
    : QDialog(parent)
    , address_(new QLineEdit(initial.port > 0 ? initial.hostPort() : QString(), this))
    , token_(new QLineEdit(initial.tokenFile, this))
    , hint_(new QLabel(this))
    , buttons_(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this)) {
    setWindowTitle(tr("Connect to Localize Agent"));
    setObjectName(QStringLiteral("connectDialog"));
    address_->setObjectName(QStringLiteral("agentAddress"));
    token_->setObjectName(QStringLiteral("agentTokenFile"));
    address_->setPlaceholderText(tr("tcp://HOST:PORT, HOST:PORT or the endpoint file"));
    address_->setToolTip(tr("What the agent printed (\"serving … on tcp://HOST:PORT\") or the "
                            "file it wrote with --endpoint-file"));
    auto* form = new QFormLayout;
    form->addRow(labelFor(tr("&Agent:"), address_, this),
                 withBrowse(address_, tr("Agent endpoint file"), this));
    form->addRow(labelFor(tr("&Token file:"), token_, this),
                 withBrowse(token_, tr("Agent token file"), this));
    hint_->setObjectName(QStringLiteral("connectHint"));
    hint_->setWordWrap(true);
    hint_->setStyleSheet(QStringLiteral("color: #4b5563;"));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(hint_);
    layout->addWidget(buttons_);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(address_, &QLineEdit::textChanged, this, &ConnectDialog::validate);
    connect(token_, &QLineEdit::textChanged, this, &ConnectDialog::validate);
    validate();
    resize(560, sizeHint().height());
}

AgentTarget ConnectDialog::target() const {
    AgentTarget t;
    t.port = 0;
    if (!AgentTarget::parseAddress(address_->text(), t)) {
        t.port = 0;
    }
    t.tokenFile = token_->text().trimmed();
    return t;
}

void ConnectDialog::validate() {
    AgentTarget t;
    QString why;
    const bool address = AgentTarget::parseAddress(address_->text(), t, &why);
    const QString token = token_->text().trimmed();
    QString hint;
    if (address_->text().trimmed().isEmpty()) {
        hint = tr("The agent's address: paste what it printed (tcp://HOST:PORT; 127.0.0.1 "
                  "through an SSH tunnel) or choose its endpoint file.");
    } else if (!address) {
        hint = why;
    } else if (token.isEmpty()) {
        hint = tr("The token file the agent wrote when it started (see its log line).");
    } else if (!QFileInfo(token).isFile()) {
        hint = tr("%1 does not exist.").arg(token);
    }
    hint_->setText(hint);
    hint_->setVisible(!hint.isEmpty());
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(address && !token.isEmpty());
}

} // namespace ttrace::ui
