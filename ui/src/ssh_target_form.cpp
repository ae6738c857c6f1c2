#include "ttrace/ui/ssh_target_form.h"

#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>

namespace ttrace::ui {

QLineEdit* SshTargetForm::addRow(QFormLayout* form, const QString& label, const QString& text,
                                 const QString& placeholder, const QString& tip, const char* name) {
    auto* edit = new QLineEdit(text, this);
    edit->setObjectName(QString::fromLatin1(name));
    edit->setPlaceholderText(placeholder);
    edit->setToolTip(tip);
    auto* caption = new QLabel(label, this);
    caption->setBuddy(edit);
    form->addRow(caption, edit);
    connect(edit, &QLineEdit::textChanged, this, &SshTargetForm::changed);
    return edit;
}

SshTargetForm::SshTargetForm(const SshTarget& t, QWidget* parent)
    : QWidget(parent) {
    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    destination_ = addRow(
        form, tr("&Host:"), t.destination, tr("user@gpu-host, or a Host alias of ~/.ssh/config"),
        tr("Any ssh destination: your ssh runs with your keys and config (ProxyJump through a "
           "login node included)"),
        "sshDestination");
    reference_ = addRow(form, tr("&Reference there:"), t.reference,
                        tr("the reference bundle's path on the host"),
                        tr("Default: the path opened here"), "sshReference");
    candidate_ = addRow(form, tr("&Candidate there:"), t.candidate,
                        tr("the candidate bundle's path on the host"),
                        tr("Default: the path opened here"), "sshCandidate");
    codeFolder_ = addRow(form, tr("C&ode folder:"), t.codeFolder,
                         tr("optional: where the training code is (default: the job's folder)"),
                         tr("ttrace serve --cwd: the folder the script runs in on the host"),
                         "sshCodeFolder");
    ttrace_ = addRow(form, tr("&ttrace command:"), t.ttrace, QStringLiteral("ttrace"),
                     tr("How ttrace runs on the host, e.g. ~/venv/bin/ttrace"), "sshTtrace");
    sshOptions_ = addRow(
        form, tr("ssh o&ptions:"), t.sshOptions, tr("optional, e.g. -J login.cluster -p 2222"),
        tr("Extra options for ssh, before the explorer's own (double quotes group words)"),
        "sshOptions");
}

SshTarget SshTargetForm::target() const {
    SshTarget t;
    t.destination = destination_->text().trimmed();
    t.reference = reference_->text().trimmed();
    t.candidate = candidate_->text().trimmed();
    t.codeFolder = codeFolder_->text().trimmed();
    t.ttrace = ttrace_->text().trimmed();
    t.sshOptions = sshOptions_->text().trimmed();
    return t;
}

} // namespace ttrace::ui
