#pragma once
// Back and Forward through the layer tree's selections (Alt+Left / Alt+Right and toolbar
// buttons, as in browsers and RenderDoc): every cell the user selects is recorded with the
// iteration the tree showed; going back restores both. A new comparison starts a new history.
#include "ttrace/ui/models/selection_history.h"

#include <QObject>

class QAction;

namespace ttrace::ui {

class LayerTreeModel;
class LayerTreePane;

class SelectionNavigator : public QObject {
    Q_OBJECT
public:
    SelectionNavigator(LayerTreePane* tree, LayerTreeModel* model, QObject* parent = nullptr);

    [[nodiscard]] QAction* backAction() const { return back_; }
    [[nodiscard]] QAction* forwardAction() const { return forward_; }
    [[nodiscard]] const SelectionHistory& history() const { return history_; }
    bool goBack();
    bool goForward();

private:
    void record();
    bool restore(const std::optional<SelectionPlace>& place);
    void updateActions();

    LayerTreePane* tree_;
    LayerTreeModel* model_;
    QAction* back_;
    QAction* forward_;
    SelectionHistory history_;
    bool restoring_ = false; // selections made by back/forward are not recorded
};

} // namespace ttrace::ui
