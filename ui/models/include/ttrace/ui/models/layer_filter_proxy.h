#pragma once
// Filter and sort proxy of the layer tree: a case-insensitive search on the canonical module name
// and a "divergent only" switch. Filtering is recursive, so a match deep in the tree keeps its
// ancestors visible; sorting uses SortRole (execution order on the name column, ratio elsewhere).
#include <QSortFilterProxyModel>

namespace ttrace::ui {

class LayerFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit LayerFilterProxy(QObject* parent = nullptr);

    void setSearchText(const QString& text);
    void setDivergentOnly(bool divergentOnly);
    [[nodiscard]] bool divergentOnly() const { return divergentOnly_; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    bool divergentOnly_ = false;
};

} // namespace ttrace::ui
