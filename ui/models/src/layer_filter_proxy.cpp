#include "ttrace/ui/models/layer_filter_proxy.h"

#include "ttrace/diff_result.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/tensor_columns.h"

namespace ttrace::ui {

LayerFilterProxy::LayerFilterProxy(QObject* parent)
    : QSortFilterProxyModel(parent) {
    setRecursiveFilteringEnabled(true);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
    setFilterRole(ModuleNameRole);
    setFilterKeyColumn(kNameColumn);
    setSortRole(SortRole);
    // Streamed results change cells all the time; re-filtering on every change would make the
    // tree jump. The filter is re-applied when the user changes it or loading finishes.
    setDynamicSortFilter(false);
}

void LayerFilterProxy::setSearchText(const QString& text) {
    setFilterFixedString(text);
}

void LayerFilterProxy::setDivergentOnly(bool divergentOnly) {
    if (divergentOnly_ != divergentOnly) {
        divergentOnly_ = divergentOnly;
        invalidateFilter();
    }
}

bool LayerFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    if (!QSortFilterProxyModel::filterAcceptsRow(sourceRow, sourceParent)) {
        return false;
    }
    if (!divergentOnly_) {
        return true;
    }
    const auto index = sourceModel()->index(sourceRow, kNameColumn, sourceParent);
    if (!index.data(IsModuleRole).toBool()) {
        return false; // groups stay visible through recursive filtering only
    }
    const auto status = index.data(StatusRole);
    return status.isValid() && isFlagged(static_cast<Status>(status.toInt()));
}

} // namespace ttrace::ui
