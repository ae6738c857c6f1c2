#pragma once
// The layer tree's view with a frozen Module column: a second view showing only the name
// column is laid over the left edge and shares the model, the selection and the expansion, so
// the module a row belongs to stays readable whatever cell is scrolled to (a laptop's narrow
// pane shows only a few kind columns at once).
#include <QTreeView>

class QScrollBar;

namespace ttrace::ui {

class LayerTreeView : public QTreeView {
    Q_OBJECT
public:
    explicit LayerTreeView(QWidget* parent = nullptr);

    // Lays the frozen column over this view: call after the model, the selection model and the
    // item delegate are set.
    void freezeNameColumn();
    [[nodiscard]] QTreeView* frozenView() const { return frozen_; }

    void scrollTo(const QModelIndex& index, ScrollHint hint = EnsureVisible) override;

protected:
    void updateGeometries() override;
    void currentChanged(const QModelIndex& current, const QModelIndex& previous) override;
    void resizeEvent(QResizeEvent* event) override;
    void actionEvent(QActionEvent* event) override;
    QModelIndex moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers) override;

private:
    void placeFrozen();
    // expandAll/expandToDepth/collapseAll emit nothing: the frozen view copies the state.
    void syncExpansion(const QModelIndex& parent);
    // Scrolls right of the frozen column when `index`'s cell would lie under it.
    void keepClearOfFrozen(const QModelIndex& index);
    void followScroll(QScrollBar* follower, int value);

    QTreeView* frozen_;
    bool followingScroll_ = false;
};

} // namespace ttrace::ui
