#include "ttrace/ui/heat_cell_delegate.h"

#include "ttrace/compare/diff_result.h"
#include "ttrace/ui/badge_painter.h"
#include "ttrace/ui/models/color_scale.h"
#include "ttrace/ui/models/localize_badge.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/tensor_columns.h"

#include <QAbstractItemView>
#include <QApplication>
#include <QPainter>

namespace ttrace::ui {

HeatCellDelegate::HeatCellDelegate(QObject* parent)
    : QStyledItemDelegate(parent) {}

QSize HeatCellDelegate::sizeHint(const QStyleOptionViewItem& option,
                                 const QModelIndex& index) const {
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    size.setHeight(std::max(size.height(), option.fontMetrics.height() + 8));
    if (index.column() != kNameColumn) {
        size.setWidth(std::max(size.width(), option.fontMetrics.horizontalAdvance("8.8e-88") + 12));
    } else {
        size.setWidth(size.width() +
                      badgeWidth(option.font, localizeBadgeText(LocalizeBadge::IntroducedBelow)) +
                      8);
    }
    return size;
}

bool HeatCellDelegate::isCurrentRow(const QStyleOptionViewItem& option, const QModelIndex& index) {
    const auto* view = qobject_cast<const QAbstractItemView*>(option.widget);
    const QModelIndex current = view ? view->currentIndex() : QModelIndex();
    return current.isValid() && current.row() == index.row() && current.parent() == index.parent();
}

void HeatCellDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                             const QModelIndex& index) const {
    if (index.column() == kNameColumn) {
        paintName(painter, option, index);
    } else {
        paintCell(painter, option, index);
    }
}

void HeatCellDelegate::paintName(QPainter* painter, const QStyleOptionViewItem& option,
                                 const QModelIndex& index) const {
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const auto origin = static_cast<Origin>(index.data(OriginRole).toInt());
    QString badge;
    QColor badgeColor;
    // A replay verdict outranks the offline estimate: it was measured with correct inputs.
    if (const auto replayed = static_cast<LocalizeBadge>(index.data(LocalizeBadgeRole).toInt());
        replayed != LocalizeBadge::None) {
        badge = localizeBadgeText(replayed);
        badgeColor = localizeBadgeColor(replayed);
    } else if (origin == Origin::Introduced) {
        badge = tr("introduced");
        badgeColor = introducedBadgeColor();
    } else if (origin == Origin::Inherited) {
        badge = tr("inherited");
        badgeColor = inheritedBadgeColor();
    } else if (origin == Origin::Undetermined) {
        // Diverges, but what it consumed could not be compared: neither blamed nor cleared.
        badge = tr("inputs invalid");
        badgeColor = heatColor(Status::Invalid, 0.0);
    }
    if (!index.data(IsModuleRole).toBool()) {
        opt.font.setItalic(true);
        opt.palette.setColor(QPalette::Text, opt.palette.color(QPalette::PlaceholderText));
    }
    const bool currentRow = isCurrentRow(option, index);
    if (currentRow) {
        // The row of the selected cell, whatever its column: its name reads as selected.
        opt.state |= QStyle::State_Selected;
        opt.font.setBold(true);
    }
    int textWidth = opt.rect.width() - (badge.isEmpty() ? 0 : badgeWidth(opt.font, badge) + 6) - 8;
    // A long replay badge ("introduced in gradient reduction") must not leave the module a
    // name of three letters: where the name would be cut, a guilty module's badge says only
    // "introduced" (same colour; the headline and the drill-down say where).
    const auto replayed = static_cast<LocalizeBadge>(index.data(LocalizeBadgeRole).toInt());
    if (isGuiltyBadge(replayed) && QFontMetrics(opt.font).horizontalAdvance(opt.text) > textWidth) {
        badge = tr("introduced");
        textWidth = opt.rect.width() - badgeWidth(opt.font, badge) - 6 - 8;
    }
    // Canonical names share long prefixes and differ at the end ("layers.11.mlp.fc2"): the
    // middle goes first; the full name is in the tooltip.
    opt.text = QFontMetrics(opt.font).elidedText(opt.text, Qt::ElideMiddle, std::max(textWidth, 0));
    const QWidget* widget = option.widget;
    QStyle* style = widget ? widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget);
    if (!badge.isEmpty()) {
        const int w = badgeWidth(opt.font, badge);
        const int textRight =
            opt.rect.left() + 6 + QFontMetrics(opt.font).horizontalAdvance(opt.text);
        const QRect area(std::min(textRight + 8, opt.rect.right() - w - 2), opt.rect.top(), w,
                         opt.rect.height());
        paintBadge(painter, area, opt.font, badge, badgeColor);
    }
}

void HeatCellDelegate::paintCell(QPainter* painter, const QStyleOptionViewItem& option,
                                 const QModelIndex& index) const {
    const bool selected = option.state & QStyle::State_Selected;
    const QColor base = option.palette.color(QPalette::Base);
    painter->save();
    painter->fillRect(option.rect, base);
    const QVariant ratio = index.data(RatioRole);
    if (ratio.isValid()) {
        const bool aggregate = index.data(AggregateRole).toBool();
        const auto status = static_cast<Status>(index.data(StatusRole).toInt());
        QColor fill = heatColor(status, ratio.toDouble(), scale_);
        QRect tile = option.rect.adjusted(1, 1, -1, -1);
        if (aggregate) {
            // A branch's worst descendant: a lighter, inset tile.
            fill = QColor::fromRgbF(0.45f * fill.redF() + 0.55f * base.redF(),
                                    0.45f * fill.greenF() + 0.55f * base.greenF(),
                                    0.45f * fill.blueF() + 0.55f * base.blueF());
            tile = tile.adjusted(0, 2, 0, -2);
        }
        painter->fillRect(tile, fill);
        QFont font = option.font;
        font.setItalic(aggregate);
        if (isFlagged(status)) {
            font.setBold(!aggregate);
        }
        painter->setFont(font);
        painter->setPen(aggregate ? option.palette.color(QPalette::Text) : contrastingText(fill));
        painter->drawText(tile.adjusted(4, 0, -5, 0), Qt::AlignRight | Qt::AlignVCenter,
                          index.data(Qt::DisplayRole).toString());
    }
    if (!selected && isCurrentRow(option, index)) {
        // The selected row as a band across the heat cells.
        QColor band = option.palette.color(QPalette::Highlight);
        painter->fillRect(QRect(option.rect.left(), option.rect.top(), option.rect.width(), 2),
                          band);
        painter->fillRect(
            QRect(option.rect.left(), option.rect.bottom() - 1, option.rect.width(), 2), band);
    }
    if (selected) {
        QPen pen(option.palette.color(QPalette::Highlight), 2);
        painter->setPen(pen);
        painter->setBrush(Qt::NoBrush);
        painter->drawRect(option.rect.adjusted(1, 1, -1, -1));
    }
    painter->restore();
}

} // namespace ttrace::ui
