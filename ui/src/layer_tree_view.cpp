#include "ttrace/ui/layer_tree_view.h"

#include "ttrace/ui/models/tensor_columns.h"

#include <QActionEvent>
#include <QHeaderView>
#include <QScrollBar>

namespace ttrace::ui {
namespace {

// The frozen names' view. It lays its rows out lazily like any view; before its scroll bar is
// moved from outside, a pending layout must run, or it scrolls over rows of a model that has
// since changed.
class FrozenColumnView : public QTreeView {
public:
    using QTreeView::QTreeView;
    void layoutIfPending() { executeDelayedItemsLayout(); }
};

} // namespace

LayerTreeView::LayerTreeView(QWidget* parent)
    : QTreeView(parent)
    , frozen_(new FrozenColumnView(this)) {
    frozen_->setObjectName(QStringLiteral("frozenModuleColumn"));
    frozen_->hide();
}

void LayerTreeView::freezeNameColumn() {
    frozen_->setModel(model());
    frozen_->setSelectionModel(selectionModel());
    frozen_->setItemDelegate(itemDelegate());
    frozen_->setFocusPolicy(Qt::NoFocus);
    frozen_->setUniformRowHeights(uniformRowHeights());
    frozen_->setIndentation(indentation());
    frozen_->setAnimated(false);
    frozen_->setSelectionBehavior(selectionBehavior());
    frozen_->setSelectionMode(selectionMode());
    frozen_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->setFrameShape(QFrame::NoFrame);
    frozen_->setContextMenuPolicy(Qt::ActionsContextMenu); // the actions are mirrored
    frozen_->header()->setDefaultAlignment(header()->defaultAlignment());
    frozen_->header()->setSectionResizeMode(QHeaderView::Fixed);
    frozen_->header()->setStretchLastSection(false);
    for (int c = 0; c < model()->columnCount(); ++c) {
        frozen_->setColumnHidden(c, c != kNameColumn);
    }
    frozen_->setColumnWidth(kNameColumn, columnWidth(kNameColumn));
    frozen_->setSortingEnabled(isSortingEnabled());
    frozen_->sortByColumn(header()->sortIndicatorSection(), header()->sortIndicatorOrder());
    viewport()->stackUnder(frozen_);
    // A thin line marks where the scrolled cells pass under the names.
    frozen_->setStyleSheet(QStringLiteral("QTreeView#frozenModuleColumn { border-right: 1px solid "
                                          "palette(mid); }"));
    connect(header(), &QHeaderView::sectionResized, this, [this](int section, int, int size) {
        if (section == kNameColumn) {
            frozen_->setColumnWidth(kNameColumn, size);
            placeFrozen();
        }
    });
    connect(frozen_->header(), &QHeaderView::sortIndicatorChanged, this,
            [this](int section, Qt::SortOrder order) { sortByColumn(section, order); });
    // Pixels on both sides, so one scroll value means the same rows in both views.
    setVerticalScrollMode(ScrollPerPixel);
    frozen_->setVerticalScrollMode(ScrollPerPixel);
    connect(verticalScrollBar(), &QAbstractSlider::valueChanged, this,
            [this](int value) { followScroll(frozen_->verticalScrollBar(), value); });
    connect(frozen_->verticalScrollBar(), &QAbstractSlider::valueChanged, this,
            [this](int value) { followScroll(verticalScrollBar(), value); });
    connect(this, &QTreeView::expanded, frozen_, &QTreeView::expand);
    connect(this, &QTreeView::collapsed, frozen_, &QTreeView::collapse);
    connect(frozen_, &QTreeView::expanded, this, &QTreeView::expand);
    connect(frozen_, &QTreeView::collapsed, this, &QTreeView::collapse);
    connect(frozen_, &QAbstractItemView::doubleClicked, this, &QAbstractItemView::doubleClicked);
    // Keys keep working after a click on a name: the focus stays with this view.
    connect(frozen_, &QAbstractItemView::pressed, this, [this] { setFocus(); });
    frozen_->addActions(actions());
    frozen_->show();
    syncExpansion({});
    placeFrozen();
}

void LayerTreeView::placeFrozen() {
    if (!frozen_->isVisible() && !frozen_->model()) {
        return;
    }
    frozen_->setGeometry(frameWidth(), frameWidth(), columnWidth(kNameColumn),
                         viewport()->height() + header()->height());
    followScroll(frozen_->verticalScrollBar(), verticalScrollBar()->value());
}

void LayerTreeView::followScroll(QScrollBar* follower, int value) {
    // Each view's scroll bar moves the other: the echo of a move is not passed on (ranges may
    // differ for a moment while the views lay out, and would bounce values back and forth).
    if (followingScroll_) {
        return;
    }
    followingScroll_ = true;
    // Both views' rows must be laid out for the current model before either scrolls.
    executeDelayedItemsLayout();
    static_cast<FrozenColumnView*>(frozen_)->layoutIfPending();
    follower->setValue(value);
    followingScroll_ = false;
}

void LayerTreeView::syncExpansion(const QModelIndex& parent) {
    if (!frozen_->model() || !model()) {
        return;
    }
    const int rows = model()->rowCount(parent);
    for (int r = 0; r < rows; ++r) {
        const QModelIndex child = model()->index(r, kNameColumn, parent);
        if (!model()->hasChildren(child)) {
            continue;
        }
        const bool open = isExpanded(child);
        if (frozen_->isExpanded(child) != open) {
            frozen_->setExpanded(child, open);
        }
        if (open) {
            syncExpansion(child);
        }
    }
}

void LayerTreeView::updateGeometries() {
    QTreeView::updateGeometries();
    syncExpansion({});
    placeFrozen();
}

void LayerTreeView::currentChanged(const QModelIndex& current, const QModelIndex& previous) {
    QTreeView::currentChanged(current, previous);
    // The whole row is highlighted, not just the cell: both rows repaint.
    viewport()->update();
    frozen_->viewport()->update();
}

void LayerTreeView::resizeEvent(QResizeEvent* event) {
    QTreeView::resizeEvent(event);
    placeFrozen();
}

void LayerTreeView::actionEvent(QActionEvent* event) {
    QTreeView::actionEvent(event);
    if (event->type() == QEvent::ActionAdded) {
        frozen_->insertAction(event->before(), event->action());
    } else if (event->type() == QEvent::ActionRemoved) {
        frozen_->removeAction(event->action());
    }
}

void LayerTreeView::keepClearOfFrozen(const QModelIndex& index) {
    if (!index.isValid() || index.column() == kNameColumn) {
        return;
    }
    const int left = visualRect(index).left();
    const int covered = columnWidth(kNameColumn);
    if (left < covered) {
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() - (covered - left));
    }
}

void LayerTreeView::scrollTo(const QModelIndex& index, ScrollHint hint) {
    // The name column never needs horizontal scrolling: it is always shown.
    const int keep = horizontalScrollBar()->value();
    QTreeView::scrollTo(index, hint);
    if (index.column() == kNameColumn) {
        horizontalScrollBar()->setValue(keep);
    } else {
        keepClearOfFrozen(index);
    }
}

QModelIndex LayerTreeView::moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers) {
    const QModelIndex current = QTreeView::moveCursor(cursorAction, modifiers);
    keepClearOfFrozen(current);
    return current;
}

} // namespace ttrace::ui
