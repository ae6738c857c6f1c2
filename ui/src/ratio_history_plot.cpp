#include "ttrace/ui/ratio_history_plot.h"

#include "plot_style.h"
#include "ttrace/ui/models/color_scale.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

#include <cmath>

namespace ttrace::ui {
namespace {

// Keeps zeros and infinities on a log axis.
double plottable(double ratio) {
    if (std::isnan(ratio) || ratio > 1e6) {
        return 1e6;
    }
    return std::max(ratio, kScaleMinRatio);
}

QCPGraph* addScatter(QCustomPlot* plot, const QColor& color, double size) {
    auto* graph = plot->addGraph();
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, color.darker(120), color, size));
    return graph;
}

} // namespace

RatioHistoryPlot::RatioHistoryPlot(QWidget* parent)
    : QWidget(parent)
    , plot_(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    plot_->setObjectName(QStringLiteral("ratioHistoryPlot"));
    applyPlotStyle(plot_, tr("Ratio across steps"));
    line_ = plot_->addGraph();
    line_->setPen(QPen(QColor(0x9ca3af), 1.5));
    clean_ = addScatter(plot_, heatColor(0.1), 7);
    divergent_ = addScatter(plot_, heatColor(10.0), 7);
    current_ = plot_->addGraph();
    current_->setLineStyle(QCPGraph::lsNone);
    current_->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(0x1f2937), 2), Qt::NoBrush, 13));
    makeLogAxis(plot_->yAxis);
    plot_->yAxis->setLabel(tr("error / tolerance"));
    plot_->xAxis->setLabel(tr("iteration · micro-batch"));
    addToleranceLine(plot_, false, 1.0);
    setPoints({});
    setMinimumSize(220, 160);
}

void RatioHistoryPlot::setPoints(const std::vector<RatioPoint>& points) {
    QVector<double> lk, lv, ck, cv, dk, dv, xk, xv;
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    double lo = 0.01;
    double hi = 10.0;
    const int stride = std::max<int>(1, static_cast<int>(points.size() / 8));
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        const double x = static_cast<double>(i);
        const double y = plottable(p.ratio);
        lk << x;
        lv << y;
        (p.ratio > 1.0 || std::isnan(p.ratio) ? dk : ck) << x;
        (p.ratio > 1.0 || std::isnan(p.ratio) ? dv : cv) << y;
        if (p.current) {
            xk << x;
            xv << y;
        }
        lo = std::min(lo, y);
        hi = std::max(hi, y);
        if (static_cast<int>(i) % stride == 0 || p.current) {
            ticker->addTick(x, p.microBatch < 0
                                   ? QStringLiteral("%1").arg(p.iteration)
                                   : QStringLiteral("%1·%2").arg(p.iteration).arg(p.microBatch));
        }
    }
    line_->setData(lk, lv, true);
    clean_->setData(ck, cv, true);
    divergent_->setData(dk, dv, true);
    current_->setData(xk, xv, true);
    plot_->xAxis->setTicker(ticker);
    plot_->xAxis->setRange(-0.6, std::max<double>(0.6, static_cast<double>(points.size()) - 0.4));
    plot_->yAxis->setRange(std::pow(10.0, std::floor(std::log10(lo))),
                           std::pow(10.0, std::ceil(std::log10(hi * 1.5))));
    count_ = static_cast<int>(points.size());
    setPlaceholder(plot_, points.empty() ? tr("select a tensor") : QString());
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void RatioHistoryPlot::replotNow() {
    plot_->replot(QCustomPlot::rpImmediateRefresh);
}

} // namespace ttrace::ui
