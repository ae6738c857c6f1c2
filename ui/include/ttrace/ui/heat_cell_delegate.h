#pragma once
// Paints the layer tree: ratio cells as heat-map tiles (colour from RatioRole/StatusRole through
// the shared colour scale), the name column with an "introduced"/"inherited" badge from
// OriginRole. Aggregated cells (a branch's worst descendant) are drawn lighter and narrower so
// they are told apart from a module's own tensors.
#include <QStyledItemDelegate>

namespace ttrace::ui {

class HeatCellDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit HeatCellDelegate(QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    // Whether `index` is on the row of the view's current cell (highlighted as a row).
    static bool isCurrentRow(const QStyleOptionViewItem& option, const QModelIndex& index);

private:
    void paintName(QPainter* painter, const QStyleOptionViewItem& option,
                   const QModelIndex& index) const;
    void paintCell(QPainter* painter, const QStyleOptionViewItem& option,
                   const QModelIndex& index) const;
};

} // namespace ttrace::ui
