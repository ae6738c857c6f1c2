#pragma once
// The one place that wires a layer tree view: filter/sort proxy over the source model, the heat
// delegate, the search box, header sizing. Every tree of the explorer goes through it, so they
// all filter, sort and paint alike (KDAB hotspot's ResultsUtil::setupTreeView pattern).
class QAbstractItemModel;
class QLineEdit;
class QTreeView;

namespace ttrace::ui {

class LayerFilterProxy;

// Returns the proxy (owned by `view`). `search` may be null.
LayerFilterProxy* setupLayerTreeView(QTreeView* view, QAbstractItemModel* source,
                                     QLineEdit* search);

} // namespace ttrace::ui
