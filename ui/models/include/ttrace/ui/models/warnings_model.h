#pragma once
// Tree model over grouped warnings: one row per group ("replica-disagree · final_layernorm ·
// 6"), its diagnostics as children. ModuleNameRole and TensorIndexRole link a group to the
// layer tree; StatusRole carries the severity (int(ttrace::Severity)).
#include "ttrace/ui/models/warning_groups.h"

#include <QAbstractItemModel>

#include <vector>

namespace ttrace::ui {

class WarningsModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { KindColumn, ModuleColumn, CountColumn, ColumnCount };

    explicit WarningsModel(QObject* parent = nullptr);

    void setGroups(std::vector<WarningGroup> groups);
    void clear() { setGroups({}); }
    [[nodiscard]] const std::vector<WarningGroup>& groups() const { return groups_; }
    [[nodiscard]] int errorCount() const;
    [[nodiscard]] int itemCount() const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    QVariant groupData(const WarningGroup& group, int column, int role) const;
    QVariant itemData(const WarningGroup& group, const Diagnostic& item, int column,
                      int role) const;

    std::vector<WarningGroup> groups_;
};

} // namespace ttrace::ui
