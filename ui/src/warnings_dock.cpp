#include "ttrace/ui/warnings_dock.h"

#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/models/warnings_model.h"

#include <QHeaderView>
#include <QTreeView>

namespace ttrace::ui {

WarningsDock::WarningsDock(WarningsModel* model, QWidget* parent)
    : QDockWidget(tr("Warnings"), parent)
    , model_(model)
    , view_(new QTreeView(this)) {
    setObjectName(QStringLiteral("warningsDock"));
    view_->setObjectName(QStringLiteral("warningsView"));
    view_->setModel(model_);
    view_->setUniformRowHeights(true);
    view_->setRootIsDecorated(true);
    view_->setAlternatingRowColors(true);
    view_->header()->setStretchLastSection(false);
    view_->header()->setSectionResizeMode(WarningsModel::KindColumn, QHeaderView::Stretch);
    view_->header()->setSectionResizeMode(WarningsModel::ModuleColumn,
                                          QHeaderView::ResizeToContents);
    view_->header()->setSectionResizeMode(WarningsModel::CountColumn,
                                          QHeaderView::ResizeToContents);
    setWidget(view_);
    connect(view_, &QTreeView::activated, this, [this](const QModelIndex& index) {
        const QString module = index.data(ModuleNameRole).toString();
        if (!module.isEmpty()) {
            emit moduleActivated(module, index.data(TensorIndexRole).toLongLong());
        }
    });
    connect(model_, &QAbstractItemModel::modelReset, this, &WarningsDock::refresh);
    refresh();
}

void WarningsDock::refresh() {
    const auto groups = static_cast<int>(model_->groups().size());
    const int errors = model_->errorCount();
    QString title =
        groups == 0 ? tr("Warnings")
                    : tr("Warnings (%1 groups, %2 findings)").arg(groups).arg(model_->itemCount());
    if (errors > 0) {
        title = tr("Problems (%1 errors) and warnings").arg(errors);
    }
    setWindowTitle(title);
    view_->collapseAll();
}

} // namespace ttrace::ui
