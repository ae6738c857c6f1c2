#pragma once
// Private to ttrace_ui: the common look of the drill-down plots (QCustomPlot stays out of the
// public headers so users of ttrace_ui need not include it).
#include <QColor>
#include <QString>

class QCustomPlot;
class QCPAxis;
class QCPBars;

namespace ttrace::ui {

// White background, light grid, small fonts, a bold title row.
void applyPlotStyle(QCustomPlot* plot, const QString& title);
// Logarithmic value axis with powers-of-ten labels.
void makeLogAxis(QCPAxis* axis);
// A bar series without outline in one colour.
QCPBars* addBars(QCustomPlot* plot, const QColor& color, const QString& name);
// A dashed line at the tolerance (ratio 1): vertical at x = `key` or horizontal at y = `value`.
void addToleranceLine(QCustomPlot* plot, bool vertical, double at);
// Shown in the middle of an empty plot.
void setPlaceholder(QCustomPlot* plot, const QString& text);

} // namespace ttrace::ui
