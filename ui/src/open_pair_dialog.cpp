#include "ttrace/ui/open_pair_dialog.h"

#include "ttrace/ui/models/bundle_folder_check.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace ttrace::ui {

namespace {

constexpr int kPairRole = Qt::UserRole;

void showCheck(QLabel* label, const BundleFolderCheck& check) {
    label->setText(check.readable ? check.summary : check.problem);
    label->setStyleSheet(check.readable ? QString() : QStringLiteral("color: #b91c1c;"));
}

} // namespace

OpenPairDialog::OpenPairDialog(const BundlePair& initial, const QList<BundlePair>& recent,
                               QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("Open Reference and Candidate"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    reference_ = addFolderRow(form, tr("&Reference:"), &referenceStatus_);
    candidate_ = addFolderRow(form, tr("&Candidate:"), &candidateStatus_);
    layout->addLayout(form);
    pairStatus_ = new QLabel(this);
    pairStatus_->setWordWrap(true);
    swap_ = new QPushButton(tr("S&wap"), this);
    auto* pairRow = new QHBoxLayout;
    pairRow->addWidget(pairStatus_, 1);
    pairRow->addWidget(swap_);
    layout->addLayout(pairRow);
    auto* recentCaption = new QLabel(tr("Pairs opened before:"), this);
    layout->addWidget(recentCaption);
    recent_ = new QListWidget(this);
    for (const auto& p : recent) {
        auto* item = new QListWidgetItem(
            QStringLiteral("%1  ↔  %2")
                .arg(QDir::toNativeSeparators(p.reference), QDir::toNativeSeparators(p.candidate)));
        item->setData(kPairRole, QStringList{p.reference, p.candidate});
        recent_->addItem(item);
    }
    recent_->setVisible(!recent.isEmpty());
    recentCaption->setVisible(!recent.isEmpty());
    layout->addWidget(recent_);
    buttons_ = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    layout->addWidget(buttons_);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(swap_, &QPushButton::clicked, this, [this] {
        const auto first = reference_->text();
        reference_->setText(candidate_->text());
        candidate_->setText(first);
    });
    connect(recent_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        const auto paths = item->data(kPairRole).toStringList();
        reference_->setText(paths.value(0));
        candidate_->setText(paths.value(1));
    });
    connect(recent_, &QListWidget::itemClicked, recent_, &QListWidget::itemActivated);
    reference_->setText(initial.reference);
    candidate_->setText(initial.candidate);
    validate();
    resize(720, sizeHint().height());
}

QLineEdit* OpenPairDialog::addFolderRow(QFormLayout* form, const QString& label, QLabel** status) {
    auto* edit = new QLineEdit(this);
    auto* browse = new QPushButton(tr("Browse…"), this);
    auto* row = new QHBoxLayout;
    row->addWidget(edit, 1);
    row->addWidget(browse);
    auto* caption = new QLabel(label, this);
    caption->setBuddy(edit);
    form->addRow(caption, row);
    *status = new QLabel(this);
    (*status)->setWordWrap(true);
    form->addRow(QString(), *status);
    connect(edit, &QLineEdit::textChanged, this, &OpenPairDialog::validate);
    connect(browse, &QPushButton::clicked, this, [this, edit, label] {
        const auto dir =
            QFileDialog::getExistingDirectory(this, QString(label).remove('&'), edit->text());
        if (!dir.isEmpty()) {
            edit->setText(dir);
        }
    });
    return edit;
}

void OpenPairDialog::validate() {
    const auto reference = checkBundleFolder(reference_->text());
    const auto candidate = checkBundleFolder(candidate_->text());
    showCheck(referenceStatus_, reference);
    showCheck(candidateStatus_, candidate);
    const bool readable = reference.readable && candidate.readable;
    const auto problem =
        readable ? pairProblem(reference_->text(), reference, candidate_->text(), candidate)
                 : QString();
    pairStatus_->setText(problem);
    pairStatus_->setStyleSheet(QStringLiteral("color: #b91c1c;"));
    swap_->setVisible(readable && reference.role == QLatin1String("candidate") &&
                      candidate.role == QLatin1String("reference"));
    // A pair with a problem still opens: the explorer then says what the CLI says (and offers
    // Swap); only folders that are not bundles are refused here.
    openButton()->setEnabled(readable);
}

BundlePair OpenPairDialog::pair() const {
    return {QFileInfo(reference_->text().trimmed()).absoluteFilePath(),
            QFileInfo(candidate_->text().trimmed()).absoluteFilePath()};
}

QPushButton* OpenPairDialog::openButton() const {
    return buttons_->button(QDialogButtonBox::Open);
}

} // namespace ttrace::ui
