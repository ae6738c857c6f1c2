#include "ttrace/ui/replay_comparison_plot.h"

#include "plot_style.h"
#include "ttrace/ui/models/color_scale.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

#include <cmath>

namespace ttrace::ui {
namespace {

constexpr double kOffset = 0.2;
constexpr double kWidth = 0.38;

double shown(double ratio) {
    return std::isfinite(ratio) ? std::max(ratio, kScaleMinRatio) : 1e6;
}

} // namespace

ReplayComparisonPlot::ReplayComparisonPlot(QWidget* parent)
    : QWidget(parent)
    , plot_(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    plot_->setObjectName(QStringLiteral("replayComparisonPlot"));
    applyPlotStyle(plot_, tr("Captured vs replayed with the reference's inputs"));
    captured_ = addBars(plot_, heatColor(10.0), tr("captured"));
    replayed_ = addBars(plot_, QColor(0x2563eb), tr("replayed"));
    captured_->setWidth(kWidth);
    replayed_->setWidth(kWidth);
    makeLogAxis(plot_->yAxis);
    plot_->yAxis->setLabel(tr("error / tolerance"));
    addToleranceLine(plot_, false, 1.0);
    plot_->legend->setVisible(true);
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    setComparison({}, {});
    setMinimumSize(220, 160);
}

void ReplayComparisonPlot::setComparison(const QString& title, const std::vector<ReplayBar>& bars) {
    title_ = title;
    QVector<double> ck, cv, rk, rv;
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    double lo = 0.01;
    double hi = 10.0;
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const double x = static_cast<double>(i);
        if (!std::isnan(bars[i].captured)) {
            ck << x - kOffset;
            cv << shown(bars[i].captured);
            lo = std::min(lo, cv.back());
            hi = std::max(hi, cv.back());
        }
        rk << x + kOffset;
        rv << shown(bars[i].replayed);
        lo = std::min(lo, rv.back());
        hi = std::max(hi, rv.back());
        ticker->addTick(x, bars[i].label);
    }
    captured_->setData(ck, cv, true);
    replayed_->setData(rk, rv, true);
    plot_->xAxis->setTicker(ticker);
    plot_->xAxis->setRange(-0.7, std::max<double>(0.7, static_cast<double>(bars.size()) - 0.3));
    // A decade below the smallest bar, so an exact replay (ratio 0, drawn at the scale's
    // minimum) still shows as a bar.
    plot_->yAxis->setRange(std::pow(10.0, std::floor(std::log10(lo)) - 1.0),
                           std::pow(10.0, std::ceil(std::log10(hi * 1.5))));
    count_ = static_cast<int>(bars.size());
    if (auto* t = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0))) {
        t->setText(title.isEmpty() ? tr("Captured vs replayed with the reference's inputs")
                                   : title);
    }
    setPlaceholder(plot_,
                   bars.empty() ? tr("not localized yet: Module > Localize (Ctrl+L)") : QString());
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ReplayComparisonPlot::replotNow() {
    plot_->replot(QCustomPlot::rpImmediateRefresh);
}

} // namespace ttrace::ui
