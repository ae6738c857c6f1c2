#include "ttrace/ui/headline_bar.h"

#include <algorithm>

#include <QFontMetrics>
#include <QLabel>
#include <QLayout>
#include <QMouseEvent>
#include <QResizeEvent>
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
    storyText_ = headlineText(headline);
    setStyleSheet(headline.divergent
                      ? QStringLiteral("#headlineBar { background: #fef2f2; border-bottom: 1px "
                                       "solid #fecaca; } #headlineStory { color: #7f1d1d; }")
                      : QStringLiteral("#headlineBar { background: #f0fdf4; border-bottom: 1px "
                                       "solid #bbf7d0; } #headlineStory { color: #14532d; }"));
    show();
    fitHeightToWidth();
}

void HeadlineBar::setRefused(const QString& text) {
    headline_ = {};
    storyText_ = text;
    caveatText_.clear();
    conclusionText_.clear();
    caveat_->hide();
    conclusion_->hide();
    setStyleSheet(QStringLiteral("#headlineBar { background: #faf5ff; border-bottom: 1px solid "
                                 "#e9d5ff; } #headlineStory { color: #581c87; }"));
    show();
    fitHeightToWidth();
}

void HeadlineBar::setCaveat(const QString& text) {
    caveatText_ = text;
    caveat_->setVisible(!text.isEmpty());
    fitHeightToWidth();
}

QString HeadlineBar::caveat() const {
    return caveat_->isHidden() ? QString() : caveatText_;
}

void HeadlineBar::setConclusion(const QString& text, bool guilty) {
    conclusionText_ = text;
    conclusion_->setStyleSheet(guilty ? QStringLiteral("color: #7f1d1d; font-weight: bold;")
                                      : QStringLiteral("color: #374151;"));
    conclusion_->setVisible(!text.isEmpty());
    fitHeightToWidth();
}

void HeadlineBar::clear() {
    headline_ = {};
    storyText_.clear();
    caveatText_.clear();
    conclusionText_.clear();
    story_->clear();
    caveat_->clear();
    caveat_->hide();
    conclusion_->clear();
    conclusion_->hide();
    hide();
    fitHeightToWidth();
}

QString HeadlineBar::text() const {
    return storyText_;
}

QString HeadlineBar::conclusion() const {
    return conclusion_->isVisible() ? conclusionText_ : QString();
}

void HeadlineBar::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && headline_.divergent) {
        emit activated();
    }
    QFrame::mousePressEvent(event);
}

void HeadlineBar::resizeEvent(QResizeEvent* event) {
    QFrame::resizeEvent(event);
    if (event->size().width() != event->oldSize().width()) {
        fitHeightToWidth();
    }
}

void HeadlineBar::fitHeightToWidth() {
    refreshTexts();
    const QMargins m = layout()->contentsMargins();
    const int width = contentsRect().width() - m.left() - m.right();
    int height = m.top() + m.bottom();
    int shown = 0;
    for (const QLabel* l : {caveat_, story_, conclusion_}) {
        if (!l->isHidden()) {
            height += l->heightForWidth(std::max(width, l->minimumWidth()));
            ++shown;
        }
    }
    height += std::max(0, shown - 1) * layout()->spacing() + frameWidth() * 2;
    if (shown == 0) {
        height = 0;
    }
    if (height != minimumHeight()) {
        setMinimumHeight(height);
    }
}

void HeadlineBar::refreshTexts() {
    showElided(caveat_, caveatText_, 2);
    showElided(story_, storyText_, 3);
    showElided(conclusion_, conclusionText_, 3);
}

void HeadlineBar::showElided(QLabel* label, const QString& text, int maxLines) const {
    const QMargins m = layout()->contentsMargins();
    const int width =
        std::max(contentsRect().width() - m.left() - m.right(), label->minimumWidth());
    const QFontMetrics metrics(label->font());
    const int limit = maxLines * metrics.lineSpacing();
    const auto height = [&](const QString& t) {
        return metrics.boundingRect(QRect(0, 0, width, 1 << 20), Qt::TextWordWrap, t).height();
    };
    QString shown = text;
    if (height(text) > limit) {
        // The longest prefix, cut at a space, that fits with its ellipsis.
        qsizetype fits = 0;
        qsizetype tooLong = text.size();
        while (tooLong - fits > 1) {
            const qsizetype mid = (fits + tooLong) / 2;
            (height(text.left(mid) + QStringLiteral(" …")) <= limit ? fits : tooLong) = mid;
        }
        const qsizetype space = text.lastIndexOf(QLatin1Char(' '), fits);
        shown = text.left(space > 0 ? space : fits) + QStringLiteral(" …");
    }
    if (label->text() != shown) {
        label->setText(shown);
    }
    label->setToolTip(shown == text ? QString() : text);
}

} // namespace ttrace::ui
