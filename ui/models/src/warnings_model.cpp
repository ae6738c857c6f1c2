#include "ttrace/ui/models/warnings_model.h"

#include "ttrace/ui/models/roles.h"

#include <QCoreApplication>

namespace ttrace::ui {
namespace {

// Children carry their group's row + 1 in the internal id; groups carry 0.
constexpr quintptr kGroupId = 0;

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

WarningsModel::WarningsModel(QObject* parent)
    : QAbstractItemModel(parent) {}

void WarningsModel::setGroups(std::vector<WarningGroup> groups) {
    beginResetModel();
    groups_ = std::move(groups);
    endResetModel();
}

int WarningsModel::errorCount() const {
    int n = 0;
    for (const auto& g : groups_) {
        n += g.severity == Severity::Error ? static_cast<int>(g.items.size()) : 0;
    }
    return n;
}

int WarningsModel::itemCount() const {
    int n = 0;
    for (const auto& g : groups_) {
        n += static_cast<int>(g.items.size());
    }
    return n;
}

QModelIndex WarningsModel::index(int row, int column, const QModelIndex& parent) const {
    if (!hasIndex(row, column, parent)) {
        return {};
    }
    if (!parent.isValid()) {
        return createIndex(row, column, kGroupId);
    }
    return createIndex(row, column, static_cast<quintptr>(parent.row()) + 1);
}

QModelIndex WarningsModel::parent(const QModelIndex& child) const {
    if (!child.isValid() || child.internalId() == kGroupId) {
        return {};
    }
    return createIndex(static_cast<int>(child.internalId() - 1), 0, kGroupId);
}

int WarningsModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid()) {
        return static_cast<int>(groups_.size());
    }
    if (parent.internalId() != kGroupId || parent.column() != 0) {
        return 0;
    }
    return static_cast<int>(groups_[static_cast<std::size_t>(parent.row())].items.size());
}

int WarningsModel::columnCount(const QModelIndex&) const {
    return ColumnCount;
}

QVariant WarningsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) {
        return {};
    }
    if (index.internalId() == kGroupId) {
        return groupData(groups_[static_cast<std::size_t>(index.row())], index.column(), role);
    }
    const auto& group = groups_[static_cast<std::size_t>(index.internalId() - 1)];
    return itemData(group, group.items[static_cast<std::size_t>(index.row())], index.column(),
                    role);
}

QVariant WarningsModel::groupData(const WarningGroup& g, int column, int role) const {
    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case KindColumn: return qstr(std::string(g.code.name()));
        case ModuleColumn: return g.module.empty() ? tr("(bundle)") : qstr(g.module);
        case CountColumn: return static_cast<int>(g.items.size());
        default: return {};
        }
    case Qt::ToolTipRole: return qstr(g.items.front().toString());
    case ModuleNameRole: return qstr(g.module);
    case TensorIndexRole: return g.tensor ? static_cast<qlonglong>(*g.tensor) : -1LL;
    case StatusRole: return static_cast<int>(g.severity);
    default: return {};
    }
}

QVariant WarningsModel::itemData(const WarningGroup& g, const Diagnostic& d, int column,
                                 int role) const {
    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case KindColumn: return qstr(d.message);
        case ModuleColumn: return qstr(d.location);
        default: return {};
        }
    case Qt::ToolTipRole: return qstr(d.toString());
    case ModuleNameRole: return qstr(g.module);
    case TensorIndexRole: return g.tensor ? static_cast<qlonglong>(*g.tensor) : -1LL;
    case StatusRole: return static_cast<int>(d.severity);
    default: return {};
    }
}

QVariant WarningsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return {};
    }
    switch (section) {
    case KindColumn: return tr("Kind");
    case ModuleColumn: return tr("Module");
    case CountColumn: return tr("Count");
    default: return {};
    }
}

} // namespace ttrace::ui
