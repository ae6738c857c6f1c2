#include "ttrace/ui/badge_painter.h"

#include "ttrace/ui/models/color_scale.h"

#include <QFontMetrics>
#include <QPainter>
#include <QPainterPath>

namespace ttrace::ui {

QFont badgeFont(const QFont& base) {
    QFont font = base;
    font.setPointSizeF(std::max(6.0, base.pointSizeF() * 0.8));
    font.setBold(true);
    return font;
}

int badgeWidth(const QFont& base, const QString& text) {
    return QFontMetrics(badgeFont(base)).horizontalAdvance(text) + 12;
}

void paintBadge(QPainter* painter, const QRect& area, const QFont& base, const QString& text,
                const QColor& color) {
    const QFont font = badgeFont(base);
    const QFontMetrics fm(font);
    const int h = std::min(area.height() - 2, fm.height() + 4);
    const QRectF pill(area.left(), area.top() + (area.height() - h) / 2.0, badgeWidth(base, text),
                      h);
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    QPainterPath path;
    path.addRoundedRect(pill, h / 2.0, h / 2.0);
    painter->fillPath(path, color);
    painter->setFont(font);
    painter->setPen(contrastingText(color));
    painter->drawText(pill, Qt::AlignCenter, text);
    painter->restore();
}

} // namespace ttrace::ui
