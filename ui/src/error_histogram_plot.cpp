#include "ttrace/ui/error_histogram_plot.h"

#include "plot_style.h"
#include "ttrace/ui/models/color_scale.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

#include <cmath>

namespace ttrace::ui {
namespace {

constexpr double kZeroKey = -7.0;
constexpr double kNonFiniteKey = 7.0;

QString decade(int e) {
    static const QString superscripts = QString::fromUtf8("⁰¹²³⁴⁵⁶⁷⁸⁹");
    if (e == 0) {
        return QStringLiteral("1");
    }
    QString s = QStringLiteral("10");
    if (e < 0) {
        s += QChar(0x207b); // superscript minus
    }
    for (const QChar c : QString::number(std::abs(e))) {
        s += superscripts[c.digitValue()];
    }
    return s;
}

} // namespace

ErrorHistogramPlot::ErrorHistogramPlot(QWidget* parent)
    : QWidget(parent)
    , plot_(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    plot_->setObjectName(QStringLiteral("errorHistogramPlot"));
    applyPlotStyle(plot_, tr("Element errors in tolerance units"));
    zero_ = addBars(plot_, heatColor(Status::Missing, 0.0), tr("exact"));
    within_ = addBars(plot_, heatColor(0.1), tr("within tolerance"));
    beyond_bars_ = addBars(plot_, heatColor(10.0), tr("beyond tolerance"));
    nonFinite_ = addBars(plot_, heatColor(Status::Invalid, 0.0), tr("NaN/Inf"));
    for (auto* bars : {zero_, within_, beyond_bars_, nonFinite_}) {
        bars->setWidth(0.86);
    }
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    ticker->addTick(kZeroKey, QStringLiteral("0"));
    for (int e = -4; e <= 4; e += 2) {
        ticker->addTick(e, decade(e));
    }
    ticker->addTick(kNonFiniteKey, QStringLiteral("NaN"));
    plot_->xAxis->setTicker(ticker);
    plot_->xAxis->setLabel(tr("|cand − ref| per element / element tolerance"));
    plot_->xAxis->setRange(kZeroKey - 0.8, kNonFiniteKey + 0.8);
    makeLogAxis(plot_->yAxis);
    plot_->yAxis->setLabel(tr("elements"));
    plot_->yAxis->setRange(0.8, 100);
    addToleranceLine(plot_, true, 0.0);
    setHistogram(nullptr);
    setMinimumSize(220, 160);
}

void ErrorHistogramPlot::setHistogram(const ErrorHistogram* h) {
    QVector<double> zk, zv, wk, wv, bk, bv, nk, nv;
    plotted_ = 0;
    beyond_ = 0;
    double maxCount = 1.0;
    if (h) {
        if (h->exactZero > 0) {
            zk << kZeroKey;
            zv << static_cast<double>(h->exactZero);
        }
        for (std::size_t i = 0; i < h->counts.size(); ++i) {
            if (h->counts[i] <= 0) {
                continue;
            }
            const double lo = i < h->edges.size() ? h->edges[i] : 1e6;
            const double key = (lo > 0 ? std::log10(lo) : -6.0) + 0.5;
            const double count = static_cast<double>(h->counts[i]);
            if (lo >= 1.0) {
                bk << key;
                bv << count;
                beyond_ += h->counts[i];
            } else {
                wk << key;
                wv << count;
            }
            plotted_ += h->counts[i];
        }
        if (h->nonFinite > 0) {
            nk << kNonFiniteKey;
            nv << static_cast<double>(h->nonFinite);
            beyond_ += h->nonFinite;
        }
        plotted_ += h->exactZero + h->nonFinite;
        for (const auto* values : {&zv, &wv, &bv, &nv}) {
            for (const double v : *values) {
                maxCount = std::max(maxCount, v);
            }
        }
    }
    zero_->setData(zk, zv, true);
    within_->setData(wk, wv, true);
    beyond_bars_->setData(bk, bv, true);
    nonFinite_->setData(nk, nv, true);
    plot_->yAxis->setRange(
        plotted_ > 0 ? 0.7 : 1.0,
        std::pow(10.0, std::ceil(std::log10(maxCount * 1.5)) + (plotted_ > 0 ? 0 : 1)));
    setPlaceholder(plot_, !h              ? tr("select a tensor")
                          : plotted_ == 0 ? tr("no histogram")
                                          : QString());
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ErrorHistogramPlot::setTitle(const QString& title) {
    if (auto* t = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0))) {
        t->setText(title);
    }
}

QString ErrorHistogramPlot::title() const {
    const auto* t = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0));
    return t ? t->text() : QString();
}

void ErrorHistogramPlot::setAxisLabel(const QString& label) {
    plot_->xAxis->setLabel(label);
}

void ErrorHistogramPlot::replotNow() {
    plot_->replot(QCustomPlot::rpImmediateRefresh);
}

} // namespace ttrace::ui
