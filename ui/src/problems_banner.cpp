#include "ttrace/ui/problems_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

namespace ttrace::ui {
namespace {

constexpr int kShownLines = 12;

} // namespace

ProblemsBanner::ProblemsBanner(QWidget* parent)
    : QFrame(parent)
    , headline_(new QLabel(this))
    , details_(new QLabel(this))
    , detailsScroll_(new QScrollArea(this))
    , close_(new QToolButton(this))
    , fix_(new QToolButton(this)) {
    setObjectName(QStringLiteral("problemsBanner"));
    headline_->setObjectName(QStringLiteral("problemsHeadline"));
    details_->setObjectName(QStringLiteral("problemsDetails"));
    QFont bold = font();
    bold.setBold(true);
    headline_->setFont(bold);
    headline_->setWordWrap(true);
    details_->setWordWrap(true);
    details_->setTextFormat(Qt::PlainText);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    close_->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
    close_->setAutoRaise(true);
    close_->setToolTip(tr("Hide"));
    connect(close_, &QToolButton::clicked, this, &QWidget::hide);

    // The lines scroll inside a few rows: a bundle with many problems never pushes the panes,
    // the status bar and its Cancel off a laptop screen.
    detailsScroll_->setWidget(details_);
    detailsScroll_->setWidgetResizable(true);
    detailsScroll_->setFrameShape(QFrame::NoFrame);
    detailsScroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    detailsScroll_->setMaximumHeight(4 * fontMetrics().lineSpacing() + 6);
    detailsScroll_->setStyleSheet(QStringLiteral("QScrollArea, QScrollArea > QWidget > QWidget "
                                                 "{ background: transparent; }"));
    headline_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    headline_->setMinimumWidth(560);
    auto* text = new QVBoxLayout;
    text->setSpacing(4);
    text->addWidget(headline_);
    text->addWidget(detailsScroll_);
    fix_->setObjectName(QStringLiteral("problemsFix"));
    fix_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    fix_->hide();
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(12, 8, 6, 8);
    layout->addLayout(text, 1);
    layout->addWidget(fix_, 0, Qt::AlignTop);
    layout->addWidget(close_, 0, Qt::AlignTop);
    hide();
}

void ProblemsBanner::setProblems(const QString& headline, const Diagnostics& problems) {
    lines_.clear();
    errors_ = 0;
    for (const auto severity : {Severity::Error, Severity::Warning}) {
        for (const auto& d : problems) {
            if (d.severity == severity) {
                lines_ << QString::fromStdString(d.toString());
                errors_ += severity == Severity::Error ? 1 : 0;
            }
        }
    }
    const bool error = errors_ > 0;
    setStyleSheet(
        error ? QStringLiteral("#problemsBanner { background: #fdecea; border: 1px solid "
                               "#f5c2bd; border-radius: 4px; } QLabel { color: #7f1d1d; }")
              : QStringLiteral("#problemsBanner { background: #fff7e0; border: 1px solid "
                               "#f3dc9b; border-radius: 4px; } QLabel { color: #713f12; }"));
    headline_->setText(headline);
    QStringList shown = lines_.mid(0, kShownLines);
    if (lines_.size() > kShownLines) {
        shown << tr("… and %1 more").arg(lines_.size() - kShownLines);
    }
    details_->setText(shown.join('\n'));
    detailsScroll_->setVisible(!shown.isEmpty());
    setVisible(!headline.isEmpty() || !lines_.isEmpty());
}

void ProblemsBanner::setFixAction(QAction* action) {
    fix_->setDefaultAction(action);
    fix_->setVisible(action != nullptr);
}

void ProblemsBanner::clear() {
    setFixAction(nullptr);
    lines_.clear();
    errors_ = 0;
    headline_->clear();
    details_->clear();
    hide();
}

QString ProblemsBanner::text() const {
    return headline_->text() + '\n' + lines_.join('\n');
}

} // namespace ttrace::ui
