#pragma once
// Property/value table of one compared tensor (error, tolerance and how it was derived, ratio,
// max abs error, cosine, NaN/Inf, shape, dtype, placement, findings). Holds a copy of the
// immutable result, so it never dangles when the results are replaced.
#include "ttrace/compare/diff_result.h"

#include <QAbstractTableModel>
#include <QModelIndexList>

#include <optional>
#include <utility>
#include <vector>

namespace ttrace::ui {

class StatsTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { PropertyColumn, ValueColumn, ColumnCount };

    explicit StatsTableModel(QObject* parent = nullptr);

    void setTensor(std::optional<TensorResult> tensor);
    [[nodiscard]] const std::optional<TensorResult>& tensor() const { return tensor_; }

    // Tab-separated text of the given cells (whole rows when both columns are selected), in row
    // order; all rows when `indexes` is empty. What Ctrl+C puts on the clipboard.
    [[nodiscard]] QString copyText(const QModelIndexList& indexes = {}) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    std::optional<TensorResult> tensor_;
    std::vector<std::pair<QString, QString>> rows_;
};

// The rows above as (property, value) pairs; shared with the Markdown report.
std::vector<std::pair<QString, QString>> tensorStatsRows(const TensorResult& tensor);

} // namespace ttrace::ui
