#include "ttrace/ui/models/layer_filter_proxy.h"

#include "ttrace/compare/diff_result.h"
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

void LayerFilterProxy::setSearch(const QString& text, bool regex) {
    if (text == text_ && regex == regex_) {
        return;
    }
    text_ = text;
    regex_ = regex;
    pattern_ = QRegularExpression(regex ? text : QRegularExpression::escape(text),
                                  QRegularExpression::CaseInsensitiveOption);
    invalidateFilter();
}

QString LayerFilterProxy::searchError() const {
    return pattern_.isValid() ? QString() : pattern_.errorString();
}

bool LayerFilterProxy::matches(const QString& name, const QString& type) const {
    if (text_.isEmpty()) {
        return true;
    }
    if (!pattern_.isValid()) {
        return false;
    }
    return pattern_.match(name).hasMatch() || (!type.isEmpty() && pattern_.match(type).hasMatch());
}

void LayerFilterProxy::setDivergentOnly(bool divergentOnly) {
    if (divergentOnly_ != divergentOnly) {
        divergentOnly_ = divergentOnly;
        invalidateFilter();
    }
}

bool LayerFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const auto index = sourceModel()->index(sourceRow, kNameColumn, sourceParent);
    if (!matches(index.data(ModuleNameRole).toString(), index.data(ModuleTypeRole).toString())) {
        return false;
    }
    if (!divergentOnly_) {
        return true;
    }
    if (!index.data(IsModuleRole).toBool()) {
        return false; // groups stay visible through recursive filtering only
    }
    const auto status = index.data(StatusRole);
    return status.isValid() && isFlagged(static_cast<Status>(status.toInt()));
}

} // namespace ttrace::ui
