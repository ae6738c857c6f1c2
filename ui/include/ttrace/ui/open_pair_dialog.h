#pragma once
// "Open": one dialog for the pair. Both folders are checked from their manifests as they are
// typed or browsed (`checkBundleFolder`): what each holds, or what is wrong with it, is shown
// under it, and Open is enabled only when both are readable trace bundles. Pairs that opened
// before are offered; choosing one fills both fields. A pair whose roles look swapped is said
// so, with Swap.
#include "ttrace/ui/models/recent_bundles.h"

#include <QDialog>

class QDialogButtonBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace ttrace::ui {

class OpenPairDialog : public QDialog {
    Q_OBJECT
public:
    OpenPairDialog(const BundlePair& initial, const QList<BundlePair>& recent,
                   QWidget* parent = nullptr);

    [[nodiscard]] BundlePair pair() const;
    [[nodiscard]] QLineEdit* referenceEdit() const { return reference_; }
    [[nodiscard]] QLineEdit* candidateEdit() const { return candidate_; }
    [[nodiscard]] QLabel* referenceStatus() const { return referenceStatus_; }
    [[nodiscard]] QLabel* candidateStatus() const { return candidateStatus_; }
    [[nodiscard]] QLabel* pairStatus() const { return pairStatus_; }
    [[nodiscard]] QListWidget* recentList() const { return recent_; }
    [[nodiscard]] QPushButton* openButton() const;
    [[nodiscard]] QPushButton* swapButton() const { return swap_; }

private:
    QLineEdit* addFolderRow(QFormLayout* form, const QString& label, QLabel** status);
    void validate();

    QLineEdit* reference_ = nullptr;
    QLineEdit* candidate_ = nullptr;
    QLabel* referenceStatus_ = nullptr;
    QLabel* candidateStatus_ = nullptr;
    QLabel* pairStatus_ = nullptr;
    QListWidget* recent_ = nullptr;
    QPushButton* swap_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
};

} // namespace ttrace::ui
