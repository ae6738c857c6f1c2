#include "ttrace/ui/slice_error_plot.h"

#include "plot_style.h"
#include "ttrace/ui/models/color_scale.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

#include <cmath>

namespace ttrace::ui {

SliceErrorPlot::SliceErrorPlot(QWidget* parent)
    : QWidget(parent)
    , plot_(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    plot_->setObjectName(QStringLiteral("sliceErrorPlot"));
    applyPlotStyle(plot_, tr("Error along the chosen dimension"));
    clean_ = addBars(plot_, heatColor(0.1), tr("within tolerance"));
    divergent_ = addBars(plot_, heatColor(10.0), tr("beyond tolerance"));
    makeLogAxis(plot_->yAxis);
    plot_->yAxis->setLabel(tr("slice error / tolerance"));
    addToleranceLine(plot_, false, 1.0);
    setSlices({}, -1);
    setMinimumSize(220, 150);
}

void SliceErrorPlot::setSlices(const std::vector<SliceError>& slices, int dimension) {
    QVector<double> ck, cv, dk, dv;
    double lo = 0.01;
    double hi = 10.0;
    for (const auto& s : slices) {
        const bool bad = std::isnan(s.ratio) || s.ratio > 1.0;
        const double ratio = std::isfinite(s.ratio) ? std::max(s.ratio, kScaleMinRatio) : 1e6;
        (bad ? dk : ck) << static_cast<double>(s.index);
        (bad ? dv : cv) << ratio;
        lo = std::min(lo, ratio);
        hi = std::max(hi, ratio);
    }
    // Thin bars when there are many indices (a hidden dimension of thousands).
    const double width = slices.size() > 64 ? 1.0 : 0.7;
    clean_->setWidth(width);
    divergent_->setWidth(width);
    clean_->setData(ck, cv, true);
    divergent_->setData(dk, dv, true);
    plot_->xAxis->setLabel(dimension >= 0 ? tr("index along dimension %1").arg(dimension)
                                          : QString());
    plot_->xAxis->setRange(-0.7, std::max<double>(0.7, static_cast<double>(slices.size()) - 0.3));
    plot_->yAxis->setRange(std::pow(10.0, std::floor(std::log10(lo))),
                           std::pow(10.0, std::ceil(std::log10(hi * 1.5))));
    count_ = static_cast<int>(slices.size());
    setPlaceholder(plot_, slices.empty() ? tr("choose a dimension to slice along") : QString());
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void SliceErrorPlot::replotNow() {
    plot_->replot(QCustomPlot::rpImmediateRefresh);
}

} // namespace ttrace::ui
