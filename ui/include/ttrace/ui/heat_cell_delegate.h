#pragma once
// Paints the layer tree: ratio cells as heat-map tiles (colour from RatioRole/StatusRole through
// the shared colour scale), the name column with an "introduced"/"inherited" badge from
// OriginRole. Aggregated cells (a branch's worst descendant) are drawn lighter and narrower so
// they are told apart from a module's own tensors.
#include "ttrace/ui/models/color_scale.h"

#include <QStyledItemDelegate>

namespace ttrace::ui {

class HeatCellDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit HeatCellDelegate(QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    // The colour scale's reach (the run's worst ratio), shared with the legend.
    void setScale(const HeatScale& scale) { scale_ = scale; }

private:
    // Whether `index` is on the row of the view's current cell (highlighted as a row).
    static bool isCurrentRow(const QStyleOptionViewItem& option, const QModelIndex& index);
    void paintName(QPainter* painter, const QStyleOptionViewItem& option,
                   const QModelIndex& index) const;
    void paintCell(QPainter* painter, const QStyleOptionViewItem& option,
                   const QModelIndex& index) const;

    HeatScale scale_;
};

} // namespace ttrace::ui
