#pragma once
// The selected tensor's ratio at every captured step (iteration x micro-batch) on a log axis,
// with the tolerance line: shows whether a divergence starts at one step and grows, or is
// there from the first step.
#include <QWidget>

#include <cstdint>
#include <vector>

class QCustomPlot;
class QCPGraph;

namespace ttrace::ui {

struct RatioPoint {
    std::int64_t iteration = 0;
    std::int64_t microBatch = 0; // -1: once per iteration
    double ratio = 0.0;
    bool current = false; // the step the rest of the window shows
};

class RatioHistoryPlot : public QWidget {
    Q_OBJECT
public:
    explicit RatioHistoryPlot(QWidget* parent = nullptr);

    void setPoints(const std::vector<RatioPoint>& points);
    [[nodiscard]] int pointCount() const { return count_; }
    void replotNow();

private:
    QCustomPlot* plot_;
    QCPGraph* line_;
    QCPGraph* clean_;
    QCPGraph* divergent_;
    QCPGraph* current_;
    int count_ = 0;
};

} // namespace ttrace::ui
