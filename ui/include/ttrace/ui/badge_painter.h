#pragma once
// Rounded "pill" labels (introduced / inherited, verdicts), shared by the tree delegate, the
// legend and the summary bar so badges look the same everywhere.
#include <QColor>
#include <QFont>
#include <QRect>
#include <QString>

class QPainter;

namespace ttrace::ui {

QFont badgeFont(const QFont& base);
int badgeWidth(const QFont& base, const QString& text);
// Paints the pill vertically centred in `area`, left-aligned.
void paintBadge(QPainter* painter, const QRect& area, const QFont& base, const QString& text,
                const QColor& color);

} // namespace ttrace::ui
