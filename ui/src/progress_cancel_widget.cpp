#include "ttrace/ui/progress_cancel_widget.h"

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

namespace ttrace::ui {

ProgressCancelWidget::ProgressCancelWidget(QAction* cancel, const QString& buttonText,
                                           QWidget* parent)
    : QWidget(parent)
    , cancel_(cancel)
    , label_(new QLabel(this))
    , bar_(new QProgressBar(this))
    , button_(new QPushButton(buttonText, this)) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(label_);
    layout->addWidget(bar_);
    layout->addWidget(button_);
    label_->hide();
    connect(button_, &QPushButton::clicked, cancel_, &QAction::trigger);
    cancel_->setEnabled(false);
    hide();
}

QString ProgressCancelWidget::text() const {
    return label_->text();
}

void ProgressCancelWidget::begin(int maximum) {
    bar_->setRange(0, maximum);
    bar_->setValue(0);
    show();
    cancel_->setEnabled(true);
}

void ProgressCancelWidget::setRange(int maximum) {
    bar_->setRange(0, maximum);
}

void ProgressCancelWidget::setValue(int value) {
    bar_->setValue(value);
}

int ProgressCancelWidget::value() const {
    return bar_->value();
}

int ProgressCancelWidget::maximum() const {
    return bar_->maximum();
}

void ProgressCancelWidget::setText(const QString& text) {
    label_->setText(text);
    label_->setVisible(!text.isEmpty());
}

void ProgressCancelWidget::end() {
    hide(); // the text stays for the next run, as the job left it
    cancel_->setEnabled(false);
}

} // namespace ttrace::ui
