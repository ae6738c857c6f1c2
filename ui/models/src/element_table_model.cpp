#include "ttrace/ui/models/element_table_model.h"

#include "ttrace/ui/models/number_format.h"

#include <QStringList>

#include <cmath>

namespace ttrace::ui {
namespace {

QString indexText(const std::vector<std::int64_t>& index) {
    QStringList parts;
    for (const auto i : index) {
        parts << QString::number(i);
    }
    return QStringLiteral("[%1]").arg(parts.join(QStringLiteral(", ")));
}

QString value(double v) {
    return std::isfinite(v) ? QString::number(v, 'g', 9) : QString::number(v);
}

} // namespace

ElementTableModel::ElementTableModel(QObject* parent)
    : QAbstractTableModel(parent) {}

void ElementTableModel::setReport(const ElementReport& report) {
    beginResetModel();
    elements_ = report.largest;
    endResetModel();
}

void ElementTableModel::clear() {
    beginResetModel();
    elements_.clear();
    endResetModel();
}

int ElementTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(elements_.size());
}

int ElementTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ElementTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) {
        return {};
    }
    const auto& e = elements_[static_cast<std::size_t>(index.row())];
    const double ratio = e.tolerance > 0.0 ? e.error / e.tolerance : HUGE_VAL;
    if (role == Qt::TextAlignmentRole) {
        return index.column() == IndexColumn ? QVariant()
                                             : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    }
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) {
        return {};
    }
    switch (index.column()) {
    case IndexColumn: return indexText(e.index);
    case ReferenceColumn: return value(e.reference);
    case CandidateColumn: return value(e.candidate);
    case ErrorColumn: return formatScientific(e.error);
    case ToleranceColumn: return formatScientific(e.tolerance);
    case RatioColumn: return formatRatio(ratio);
    default: return {};
    }
}

QVariant ElementTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) {
        return {};
    }
    if (orientation == Qt::Vertical) {
        return section + 1;
    }
    switch (section) {
    case IndexColumn: return tr("Index");
    case ReferenceColumn: return tr("Reference");
    case CandidateColumn: return tr("Candidate");
    case ErrorColumn: return tr("|Error|");
    case ToleranceColumn: return tr("Tolerance");
    case RatioColumn: return tr("Error / tol.");
    default: return {};
    }
}

} // namespace ttrace::ui
