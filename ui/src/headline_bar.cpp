#include "ttrace/ui/headline_bar.h"

#include <QLabel>
#include <QMouseEvent>
#include <QVBoxLayout>

namespace ttrace::ui {

HeadlineBar::HeadlineBar(QWidget* parent)
    : QFrame(parent)
    , caveat_(new QLabel(this))
    , story_(new QLabel(this))
    , conclusion_(new QLabel(this)) {
    setObjectName(QStringLiteral("headlineBar"));
    story_->setObjectName(QStringLiteral("headlineStory"));
    caveat_->setObjectName(QStringLiteral("headlineCaveat"));
    caveat_->setStyleSheet(QStringLiteral("color: #581c87; font-weight: bold;"));
    conclusion_->setObjectName(QStringLiteral("headlineConclusion"));
    QFont big = font();
    big.setPointSizeF(font().pointSizeF() * 1.15);
    big.setBold(true);
    story_->setFont(big);
    for (auto* l : {caveat_, story_, conclusion_}) {
        l->setWordWrap(true);
        l->setTextFormat(Qt::PlainText);
        // Long module lists wrap rather than widen the window (fixed-size screenshots): a
        // wrapped label's minimum width is small, and its height follows its width.
        l->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
        // Wide enough that a long caveat wraps to a few lines: the window's minimum height
        // follows this width's line count and must stay within a laptop screen.
        l->setMinimumWidth(560);
    }
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(12, 6, 12, 6);
    layout->setSpacing(2);
    layout->addWidget(caveat_);
    layout->addWidget(story_);
    layout->addWidget(conclusion_);
    setCursor(Qt::PointingHandCursor);
    setToolTip(tr("Click to select the first divergence"));
    clear();
}

void HeadlineBar::setHeadline(const StoryHeadline& headline) {
    headline_ = headline;
    story_->setText(headlineText(headline));
    setStyleSheet(headline.divergent
                      ? QStringLiteral("#headlineBar { background: #fef2f2; border-bottom: 1px "
                                       "solid #fecaca; } #headlineStory { color: #7f1d1d; }")
                      : QStringLiteral("#headlineBar { background: #f0fdf4; border-bottom: 1px "
                                       "solid #bbf7d0; } #headlineStory { color: #14532d; }"));
    show();
}

void HeadlineBar::setRefused(const QString& text) {
    headline_ = {};
    story_->setText(text);
    caveat_->hide();
    conclusion_->hide();
    setStyleSheet(QStringLiteral("#headlineBar { background: #faf5ff; border-bottom: 1px solid "
                                 "#e9d5ff; } #headlineStory { color: #581c87; }"));
    show();
}

void HeadlineBar::setCaveat(const QString& text) {
    caveat_->setText(text);
    caveat_->setVisible(!text.isEmpty());
}

QString HeadlineBar::caveat() const {
    return caveat_->isHidden() ? QString() : caveat_->text();
}

void HeadlineBar::setConclusion(const QString& text, bool guilty) {
    conclusion_->setText(text);
    conclusion_->setStyleSheet(guilty ? QStringLiteral("color: #7f1d1d; font-weight: bold;")
                                      : QStringLiteral("color: #374151;"));
    conclusion_->setVisible(!text.isEmpty());
}

void HeadlineBar::clear() {
    headline_ = {};
    story_->clear();
    caveat_->clear();
    caveat_->hide();
    conclusion_->clear();
    conclusion_->hide();
    hide();
}

QString HeadlineBar::text() const {
    return story_->text();
}

QString HeadlineBar::conclusion() const {
    return conclusion_->isVisible() ? conclusion_->text() : QString();
}

void HeadlineBar::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && headline_.divergent) {
        emit activated();
    }
    QFrame::mousePressEvent(event);
}

} // namespace ttrace::ui
