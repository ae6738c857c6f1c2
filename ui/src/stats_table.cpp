#include "ttrace/ui/stats_table.h"

#include "ttrace/ui/models/stats_table_model.h"

#include <QAction>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QGuiApplication>
#include <QHeaderView>
#include <QMenu>

namespace ttrace::ui {

StatsTable::StatsTable(StatsTableModel* model, QWidget* parent)
    : QTableView(parent)
    , model_(model) {
    setObjectName(QStringLiteral("statsTable"));
    setModel(model_);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setSelectionMode(QAbstractItemView::ExtendedSelection);
    setAlternatingRowColors(true);
    setWordWrap(false);
    setTextElideMode(Qt::ElideRight);
    verticalHeader()->hide();
    verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    horizontalHeader()->setStretchLastSection(true);
    horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    horizontalHeader()->setHighlightSections(false);
    setContextMenuPolicy(Qt::DefaultContextMenu);

    auto* copy = new QAction(tr("&Copy"), this);
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetShortcut);
    connect(copy, &QAction::triggered, this, &StatsTable::copySelection);
    addAction(copy);
}

void StatsTable::copySelection() {
    const auto selected =
        selectionModel() ? selectionModel()->selectedIndexes() : QModelIndexList();
    QGuiApplication::clipboard()->setText(model_->copyText(selected));
}

void StatsTable::copyAll() {
    QGuiApplication::clipboard()->setText(model_->copyText());
}

void StatsTable::contextMenuEvent(QContextMenuEvent* event) {
    QMenu menu(this);
    menu.addAction(tr("Copy"), QKeySequence::Copy, this, &StatsTable::copySelection)
        ->setEnabled(selectionModel() && selectionModel()->hasSelection());
    menu.addAction(tr("Copy All"), this, &StatsTable::copyAll)->setEnabled(model_->rowCount() > 0);
    menu.exec(event->globalPos());
}

} // namespace ttrace::ui
