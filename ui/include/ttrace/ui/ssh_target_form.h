#pragma once
// The form of "Connect to GPU Host": the ssh destination, the bundles' paths on the host, the
// folder of the training code there, the command that runs ttrace there, and extra ssh options.
#include "ttrace/ui/models/ssh_target.h"

#include <QWidget>

class QFormLayout;
class QLineEdit;

namespace ttrace::ui {

class SshTargetForm : public QWidget {
    Q_OBJECT
public:
    explicit SshTargetForm(const SshTarget& initial, QWidget* parent = nullptr);

    [[nodiscard]] SshTarget target() const;
    [[nodiscard]] QLineEdit* destinationEdit() const { return destination_; }
    [[nodiscard]] QLineEdit* referenceEdit() const { return reference_; }
    [[nodiscard]] QLineEdit* candidateEdit() const { return candidate_; }
    [[nodiscard]] QLineEdit* codeFolderEdit() const { return codeFolder_; }
    [[nodiscard]] QLineEdit* ttraceEdit() const { return ttrace_; }
    [[nodiscard]] QLineEdit* sshOptionsEdit() const { return sshOptions_; }

signals:
    void changed();

private:
    QLineEdit* addRow(QFormLayout* form, const QString& label, const QString& text,
                      const QString& placeholder, const QString& tip, const char* name);

    QLineEdit* destination_;
    QLineEdit* reference_;
    QLineEdit* candidate_;
    QLineEdit* codeFolder_;
    QLineEdit* ttrace_;
    QLineEdit* sshOptions_;
};

} // namespace ttrace::ui
