#include "ttrace/ui/tree_view_setup.h"

#include "ttrace/ui/heat_cell_delegate.h"
#include "ttrace/ui/layer_tree_view.h"
#include "ttrace/ui/models/layer_filter_proxy.h"
#include "ttrace/ui/models/tensor_columns.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QTreeView>

namespace ttrace::ui {

LayerFilterProxy* setupLayerTreeView(QTreeView* view, QAbstractItemModel* source,
                                     QLineEdit* search) {
    auto* proxy = new LayerFilterProxy(view);
    proxy->setSourceModel(source);
    view->setModel(proxy);
    view->setItemDelegate(new HeatCellDelegate(view));
    view->setUniformRowHeights(true);
    view->setSelectionBehavior(QAbstractItemView::SelectItems);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setAllColumnsShowFocus(false);
    view->setSortingEnabled(true);
    view->sortByColumn(kNameColumn, Qt::AscendingOrder); // execution order
    view->setAnimated(false);
    view->setIndentation(14);

    auto* header = view->header();
    header->setStretchLastSection(false);
    header->setSectionsMovable(false);
    header->setDefaultAlignment(Qt::AlignCenter);
    header->setSectionResizeMode(kNameColumn, QHeaderView::Interactive);
    header->resizeSection(kNameColumn, 210);
    const QFontMetrics fm = view->fontMetrics();
    const int cell = std::max(fm.horizontalAdvance(QStringLiteral("main grad")) + 10,
                              fm.horizontalAdvance(QStringLiteral("8.8e-88")) + 14);
    for (int c = kWorstColumn; c < kLayerTreeColumnCount; ++c) {
        header->setSectionResizeMode(c, QHeaderView::Interactive);
        header->resizeSection(c, cell);
    }

    if (auto* layerView = qobject_cast<LayerTreeView*>(view)) {
        layerView->freezeNameColumn();
    }
    if (search) {
        search->setClearButtonEnabled(true);
        QObject::connect(search, &QLineEdit::textChanged, proxy,
                         [proxy, view](const QString& text) {
                             proxy->setSearchText(text);
                             if (!text.isEmpty()) {
                                 view->expandAll();
                             }
                         });
    }
    return proxy;
}

} // namespace ttrace::ui
