#include "ttrace/ui/shard_error_plot.h"

#include "plot_style.h"
#include "ttrace/ui/models/color_scale.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace ttrace::ui {

ShardErrorPlot::ShardErrorPlot(QWidget* parent)
    : QWidget(parent)
    , plot_(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    plot_->setObjectName(QStringLiteral("shardErrorPlot"));
    applyPlotStyle(plot_, tr("Error per candidate rank"));
    clean_ = addBars(plot_, heatColor(0.1), tr("within tolerance"));
    divergent_ = addBars(plot_, heatColor(10.0), tr("beyond tolerance"));
    clean_->setWidth(0.6);
    divergent_->setWidth(0.6);
    makeLogAxis(plot_->yAxis);
    plot_->yAxis->setLabel(tr("rank error / tolerance"));
    plot_->xAxis->setLabel(tr("rank"));
    addToleranceLine(plot_, false, 1.0);
    setShards({}, 0.0);
    setMinimumSize(220, 160);
}

void ShardErrorPlot::setShards(const std::vector<ShardError>& shards, double tolerance) {
    QVector<double> ck, cv, dk, dv;
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    double lo = 0.01;
    double hi = 10.0;
    beyond_.clear();
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const auto& s = shards[i];
        double ratio = tolerance > 0.0 ? s.relError / tolerance : (s.relError > 0 ? HUGE_VAL : 0.0);
        const bool bad = std::isnan(ratio) || ratio > 1.0;
        ratio = std::isfinite(ratio) ? std::max(ratio, kScaleMinRatio) : 1e6;
        const double x = static_cast<double>(i);
        (bad ? dk : ck) << x;
        if (bad) {
            beyond_.push_back(s.rank);
        }
        (bad ? dv : cv) << ratio;
        lo = std::min(lo, ratio);
        hi = std::max(hi, ratio);
        ticker->addTick(x, QString::number(s.rank));
    }
    clean_->setData(ck, cv, true);
    divergent_->setData(dk, dv, true);
    plot_->xAxis->setTicker(ticker);
    plot_->xAxis->setRange(-0.7, std::max<double>(0.7, static_cast<double>(shards.size()) - 0.3));
    plot_->yAxis->setRange(std::pow(10.0, std::floor(std::log10(lo))),
                           std::pow(10.0, std::ceil(std::log10(hi * 1.5))));
    count_ = static_cast<int>(shards.size());
    std::sort(beyond_.begin(), beyond_.end());
    beyond_.erase(std::unique(beyond_.begin(), beyond_.end()), beyond_.end());
    setPlaceholder(plot_, shards.empty() ? tr("no per-rank data") : QString());
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ShardErrorPlot::replotNow() {
    plot_->replot(QCustomPlot::rpImmediateRefresh);
}

} // namespace ttrace::ui
