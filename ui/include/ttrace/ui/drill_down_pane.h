#pragma once
// Drill-down of the tensor selected in the layer tree: its element-error histogram, its ratio
// across steps, its per-rank errors and a copyable statistics table; once its module is
// localized, the replayed tensor's histogram and ratios beside the captured ones.
#include <QWidget>

#include <optional>

class QLabel;

namespace ttrace::ui {

class ErrorHistogramPlot;
class LayerTreeModel;
class RatioHistoryPlot;
class ReplayComparisonPlot;
class ShardErrorPlot;
class StatsTable;
class StatsTableModel;

class DrillDownPane : public QWidget {
    Q_OBJECT
public:
    explicit DrillDownPane(const LayerTreeModel* model, QWidget* parent = nullptr);

    // Shows a tensor of the model's ResultSet; nothing clears the pane.
    void showTensor(std::optional<std::size_t> tensor);
    [[nodiscard]] std::optional<std::size_t> currentTensor() const { return current_; }

    [[nodiscard]] ErrorHistogramPlot* histogramPlot() const { return histogram_; }
    [[nodiscard]] RatioHistoryPlot* historyPlot() const { return history_; }
    [[nodiscard]] ShardErrorPlot* shardPlot() const { return shards_; }
    [[nodiscard]] StatsTable* statsTable() const { return table_; }
    [[nodiscard]] ReplayComparisonPlot* replayPlot() const { return replay_; }
    // The replayed tensor's element errors (in its replay tolerance), beside the captured
    // histogram's column; shown with replayPlot().
    [[nodiscard]] ErrorHistogramPlot* replayHistogramPlot() const { return replayHistogram_; }
    // Shows the selected module's replay verdict beside its captured errors (after a verdict
    // arrived); hidden while the module has none.
    void refreshReplay();
    // The error shape / hint / invalid reason line of the shown tensor (hidden when empty).
    [[nodiscard]] QLabel* diagnosisLabel() const { return diagnosis_; }
    // Renders the plots now (before a screenshot; normally they replot when idle).
    void replotNow();

private:
    const LayerTreeModel* model_;
    std::optional<std::size_t> current_;
    QLabel* title_;
    QLabel* subtitle_;
    QLabel* status_;
    QLabel* diagnosis_; // the error's shape and bug-class hint, or why the tensor is invalid
    ErrorHistogramPlot* histogram_;
    RatioHistoryPlot* history_;
    ShardErrorPlot* shards_;
    StatsTableModel* stats_;
    StatsTable* table_;
    ReplayComparisonPlot* replay_;
    ErrorHistogramPlot* replayHistogram_;
};

} // namespace ttrace::ui
