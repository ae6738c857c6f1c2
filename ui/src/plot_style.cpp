#include "plot_style.h"

#include <qcustomplot.h>

namespace ttrace::ui {
namespace {

const QColor kAxisColor(0x6b7280);
const QColor kGridColor(0xe5e7eb);
const QColor kToleranceColor(0xb91c1c);
constexpr auto kPlaceholderName = "placeholder";

void styleAxis(QCPAxis* axis, const QFont& font) {
    axis->setBasePen(QPen(kAxisColor));
    axis->setTickPen(QPen(kAxisColor));
    axis->setSubTickPen(QPen(kAxisColor));
    axis->setTickLabelColor(QColor(0x374151));
    axis->setLabelColor(QColor(0x374151));
    axis->setTickLabelFont(font);
    axis->setLabelFont(font);
    axis->grid()->setPen(QPen(kGridColor));
    axis->grid()->setSubGridVisible(false);
}

} // namespace

void applyPlotStyle(QCustomPlot* plot, const QString& title) {
    QFont font = plot->font();
    font.setPointSizeF(std::max(7.0, font.pointSizeF() * 0.85));
    plot->setBackground(Qt::white);
    plot->axisRect()->setBackground(Qt::white);
    for (auto* axis : {plot->xAxis, plot->yAxis}) {
        styleAxis(axis, font);
    }
    plot->xAxis2->setVisible(false);
    plot->yAxis2->setVisible(false);
    QFont titleFont = plot->font();
    titleFont.setBold(true);
    plot->plotLayout()->insertRow(0);
    auto* text = new QCPTextElement(plot, title, titleFont);
    text->setTextColor(QColor(0x111827));
    text->setMargins(QMargins(0, 4, 0, 0));
    plot->plotLayout()->addElement(0, 0, text);
    plot->setNoAntialiasingOnDrag(true);
    plot->setInteractions(QCP::Interactions());
}

void makeLogAxis(QCPAxis* axis) {
    axis->setScaleType(QCPAxis::stLogarithmic);
    QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
    ticker->setSubTickCount(0);
    axis->setTicker(ticker);
    axis->setNumberFormat(QStringLiteral("eb"));
    axis->setNumberPrecision(0);
}

QCPBars* addBars(QCustomPlot* plot, const QColor& color, const QString& name) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setName(name);
    bars->setPen(QPen(color.darker(115)));
    bars->setBrush(color);
    return bars;
}

void addToleranceLine(QCustomPlot* plot, bool vertical, double at) {
    auto* line = new QCPItemStraightLine(plot);
    line->setPen(QPen(kToleranceColor, 1.2, Qt::DashLine));
    if (vertical) {
        line->point1->setCoords(at, 1.0);
        line->point2->setCoords(at, 10.0);
    } else {
        line->point1->setCoords(0.0, at);
        line->point2->setCoords(1.0, at);
    }
    auto* label = new QCPItemText(plot);
    label->setText(QObject::tr("tolerance"));
    label->setColor(kToleranceColor);
    QFont f = plot->font();
    f.setPointSizeF(std::max(7.0, f.pointSizeF() * 0.8));
    label->setFont(f);
    if (vertical) {
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(at, 0.02);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setPadding(QMargins(4, 0, 0, 0));
    } else {
        label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        label->position->setTypeY(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(0.99, at);
        label->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    }
}

void setPlaceholder(QCustomPlot* plot, const QString& text) {
    QCPItemText* item = nullptr;
    for (int i = 0; i < plot->itemCount(); ++i) {
        if (plot->item(i)->objectName() == QLatin1String(kPlaceholderName)) {
            item = qobject_cast<QCPItemText*>(plot->item(i));
        }
    }
    if (!item) {
        item = new QCPItemText(plot);
        item->setObjectName(QLatin1String(kPlaceholderName));
        item->position->setType(QCPItemPosition::ptAxisRectRatio);
        item->position->setCoords(0.5, 0.3); // clear of the tolerance line
        item->setColor(kAxisColor);
    }
    item->setText(text);
    item->setVisible(!text.isEmpty());
}

} // namespace ttrace::ui
