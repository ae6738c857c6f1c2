#pragma once
// Histogram of one tensor's element errors |cand - ref| in units of its tolerance, on decade
// bins (log axis), with exact zeros and non-finite errors in bars of their own. Elements right of
// the tolerance line are where the bug is.
#include "ttrace/compare/histogram.h"

#include <QString>
#include <QWidget>

class QCustomPlot;
class QCPBars;

namespace ttrace::ui {

class ErrorHistogramPlot : public QWidget {
    Q_OBJECT
public:
    explicit ErrorHistogramPlot(QWidget* parent = nullptr);

    // Shows a histogram; nullptr clears the plot.
    void setHistogram(const ErrorHistogram* histogram);
    // The title row and the x axis's label (the replayed histogram counts in replay-tolerance
    // units, the captured one in the diff's).
    void setTitle(const QString& title);
    void setAxisLabel(const QString& label);
    [[nodiscard]] QString title() const;
    // Elements the plot currently shows (all bars together); 0 when empty.
    [[nodiscard]] qint64 plottedElements() const { return plotted_; }
    // Elements at or beyond the tolerance line.
    [[nodiscard]] qint64 elementsBeyondTolerance() const { return beyond_; }
    void replotNow();

private:
    QCustomPlot* plot_;
    QCPBars* zero_;
    QCPBars* within_;
    QCPBars* beyond_bars_;
    QCPBars* nonFinite_;
    qint64 plotted_ = 0;
    qint64 beyond_ = 0;
};

} // namespace ttrace::ui
