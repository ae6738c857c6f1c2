#include "ttrace/ui/selection_navigator.h"

#include "ttrace/ui/layer_tree_pane.h"
#include "ttrace/ui/models/layer_tree_model.h"

#include <QAction>
#include <QApplication>
#include <QStyle>
#include <QTreeView>

namespace ttrace::ui {

SelectionNavigator::SelectionNavigator(LayerTreePane* tree, LayerTreeModel* model, QObject* parent)
    : QObject(parent)
    , tree_(tree)
    , model_(model)
    , back_(new QAction(tree->style()->standardIcon(QStyle::SP_ArrowBack), tr("&Back"), this))
    , forward_(
          new QAction(tree->style()->standardIcon(QStyle::SP_ArrowForward), tr("&Forward"), this)) {
    back_->setObjectName(QStringLiteral("selectionBackAction"));
    forward_->setObjectName(QStringLiteral("selectionForwardAction"));
    // Alt+Left / Alt+Right everywhere (QKeySequence::Back is Alt+Left on Linux and Windows,
    // Cmd+[ on macOS); both are window-wide, like a browser's.
    const auto withAlt = [](QKeySequence::StandardKey key, QKeySequence alt) {
        QList<QKeySequence> keys = QKeySequence::keyBindings(key);
        if (!keys.contains(alt)) {
            keys.prepend(alt); // each key once: a key bound twice is an ambiguous shortcut
        }
        return keys;
    };
    back_->setShortcuts(withAlt(QKeySequence::Back, QKeySequence(Qt::ALT | Qt::Key_Left)));
    forward_->setShortcuts(withAlt(QKeySequence::Forward, QKeySequence(Qt::ALT | Qt::Key_Right)));
    for (QAction* a : {back_, forward_}) {
        a->setShortcutContext(Qt::WindowShortcut);
    }
    back_->setToolTip(tr("Back to the previous selection (Alt+Left)"));
    forward_->setToolTip(tr("Forward to the next selection (Alt+Right)"));
    connect(back_, &QAction::triggered, this, &SelectionNavigator::goBack);
    connect(forward_, &QAction::triggered, this, &SelectionNavigator::goForward);
    connect(tree_, &LayerTreePane::currentTensorChanged, this, &SelectionNavigator::record);
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
        history_.clear(); // other bundles, other modules: old places mean nothing
        updateActions();
    });
    updateActions();
}

void SelectionNavigator::record() {
    if (restoring_) {
        return;
    }
    const QString module = tree_->currentModule();
    if (module.isEmpty()) {
        return;
    }
    history_.visit(
        {module, tree_->treeView()->currentIndex().column(), model_->stepFilter().iteration});
    updateActions();
}

bool SelectionNavigator::restore(const std::optional<SelectionPlace>& place) {
    if (!place) {
        return false;
    }
    restoring_ = true;
    tree_->setIteration(place->iteration);
    const bool ok = tree_->selectModule(place->module, place->column);
    restoring_ = false;
    updateActions();
    return ok;
}

bool SelectionNavigator::goBack() {
    return restore(history_.back());
}

bool SelectionNavigator::goForward() {
    return restore(history_.forward());
}

void SelectionNavigator::updateActions() {
    back_->setEnabled(history_.canGoBack());
    forward_->setEnabled(history_.canGoForward());
}

} // namespace ttrace::ui
