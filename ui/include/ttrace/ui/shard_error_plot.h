#pragma once
// Error of each candidate rank's piece of the selected tensor, in units of the tensor's
// tolerance: a bug on one rank (a missing all-reduce term, a wrong offset) stands out as one bar.
#include "ttrace/compare/metrics.h"

#include <QWidget>

class QCustomPlot;
class QCPBars;

namespace ttrace::ui {

class ShardErrorPlot : public QWidget {
    Q_OBJECT
public:
    explicit ShardErrorPlot(QWidget* parent = nullptr);

    // Shows `shards` scaled by `tolerance`; an empty list clears the plot.
    void setShards(const std::vector<ShardError>& shards, double tolerance);
    [[nodiscard]] int barCount() const { return count_; }
    // The ranks drawn beyond the tolerance line, in rank order (what the headline's per-rank
    // statement must agree with).
    [[nodiscard]] std::vector<int> ranksBeyondTolerance() const { return beyond_; }
    void replotNow();

private:
    QCustomPlot* plot_;
    QCPBars* clean_;
    QCPBars* divergent_;
    int count_ = 0;
    std::vector<int> beyond_;
};

} // namespace ttrace::ui
