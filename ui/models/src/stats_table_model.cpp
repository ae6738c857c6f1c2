#include "ttrace/ui/models/stats_table_model.h"

#include "ttrace/io/placement.h"
#include "ttrace/ui/models/number_format.h"
#include "ttrace/ui/models/roles.h"

#include <QCoreApplication>

#include <algorithm>
#include <map>

namespace ttrace::ui {
namespace {

QString qstr(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}
QString tr(const char* text) {
    return QCoreApplication::translate("StatsTableModel", text);
}

// Optimizer-step tensors: the conditioning of the update, and the elements driving the ratio
// (docs/tolerance.md, "Optimizer-step conditioning").
void addConditioningRows(const TensorResult& t, std::vector<std::pair<QString, QString>>& rows) {
    const auto& c = t.conditioning;
    if (c.illConditioned > 0 || c.relative > 0.0) {
        rows.emplace_back(tr("Optimizer conditioning"),
                          tr("%1 ill-conditioned elements; terms %2 relative; error with "
                             "element tolerances %3")
                              .arg(formatCount(c.illConditioned), formatScientific(c.relative),
                                   formatScientific(c.conditionedError)));
    }
    QStringList top;
    for (const auto& e : c.topElements) {
        top << tr("[%1] %2 / %3 (conditioning %4)")
                   .arg(e.index)
                   .arg(formatScientific(e.error), formatScientific(e.tolerance),
                        formatScientific(e.conditioning));
    }
    if (!top.isEmpty()) {
        rows.emplace_back(tr("Elements driving the ratio"), top.join(QStringLiteral("; ")));
    }
}

} // namespace

std::vector<std::pair<QString, QString>> tensorStatsRows(const TensorResult& t) {
    const auto& m = t.metrics;
    const auto& tol = t.tolerance;
    std::vector<std::pair<QString, QString>> rows;
    rows.emplace_back(tr("Tensor"), qstr(t.id.label()));
    rows.emplace_back(tr("Status"), qstr(statusName(t.status)));
    rows.emplace_back(tr("Ratio"), formatRatio(t.ratio));
    rows.emplace_back(tr("Relative error"), formatScientific(m.relError));
    rows.emplace_back(tr("Tolerance"),
                      QStringLiteral("%1 (%2)").arg(formatScientific(tol.value),
                                                    tol.source == ToleranceSource::None
                                                        ? tr("unknown")
                                                        : qstr(tol.source.name())));
    rows.emplace_back(tr("Analytic bound"), QStringLiteral("%1 = k·C^%2·eps, eps %3")
                                                .arg(formatScientific(tol.analytic))
                                                .arg(tol.depth)
                                                .arg(formatScientific(tol.eps)));
    rows.emplace_back(tr("Empirical bound"), tol.empirical
                                                 ? QStringLiteral("%1 (floor %2 ± %3)")
                                                       .arg(formatScientific(*tol.empirical),
                                                            formatScientific(tol.floorMean),
                                                            formatScientific(tol.floorSpread))
                                                 : tr("none (no perturbed reference variants)"));
    addConditioningRows(t, rows);
    rows.emplace_back(tr("Max abs error"), formatScientific(m.maxAbsError));
    rows.emplace_back(tr("Cosine"), QString::number(m.cosine, 'f', 9));
    rows.emplace_back(
        tr("Norm ref / cand"),
        QStringLiteral("%1 / %2").arg(formatScientific(m.refNorm), formatScientific(m.candNorm)));
    rows.emplace_back(tr("Elements"), formatCount(m.elements));
    rows.emplace_back(tr("NaN / Inf cand"),
                      QStringLiteral("%1 / %2").arg(m.candNaN).arg(m.candInf));
    rows.emplace_back(tr("NaN / Inf ref"), QStringLiteral("%1 / %2").arg(m.refNaN).arg(m.refInf));
    rows.emplace_back(tr("Shape"), qstr(shapeToString(t.shape)));
    rows.emplace_back(tr("Dtype"), qstr(dtypeName(t.dtype)));
    rows.emplace_back(tr("Placement"), t.placement.empty() ? tr("—") : qstr(t.placement));
    std::map<int, bool> ranks;
    for (const auto& s : m.shards) {
        ranks[s.rank] = true;
    }
    rows.emplace_back(tr("Candidate ranks"), QString::number(ranks.size()));
    QStringList findings;
    for (const auto& d : t.findings) {
        findings << qstr(d.toString());
    }
    rows.emplace_back(tr("Findings"), findings.isEmpty() ? tr("none") : findings.join("; "));
    return rows;
}

StatsTableModel::StatsTableModel(QObject* parent)
    : QAbstractTableModel(parent) {}

void StatsTableModel::setTensor(std::optional<TensorResult> tensor) {
    beginResetModel();
    tensor_ = std::move(tensor);
    rows_ = tensor_ ? tensorStatsRows(*tensor_) : std::vector<std::pair<QString, QString>>{};
    endResetModel();
}

int StatsTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int StatsTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant StatsTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.model() != this) {
        return {};
    }
    Q_ASSERT(checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid));
    const auto& row = rows_[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole: return index.column() == PropertyColumn ? row.first : row.second;
    case StatusRole: return tensor_ ? QVariant(static_cast<int>(tensor_->status)) : QVariant();
    default: return {};
    }
}

QVariant StatsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return {};
    }
    return section == PropertyColumn ? tr("Property")
           : section == ValueColumn  ? tr("Value")
                                     : QVariant();
}

QString StatsTableModel::copyText(const QModelIndexList& indexes) const {
    std::map<int, std::map<int, QString>> cells;
    if (indexes.isEmpty()) {
        for (int r = 0; r < rowCount(); ++r) {
            for (int c = 0; c < ColumnCount; ++c) {
                cells[r][c] = index(r, c).data().toString();
            }
        }
    }
    for (const auto& i : indexes) {
        if (i.isValid() && i.model() == this) {
            cells[i.row()][i.column()] = i.data().toString();
        }
    }
    QStringList lines;
    for (const auto& [row, columns] : cells) {
        QStringList fields;
        for (const auto& [column, text] : columns) {
            fields << text;
        }
        lines << fields.join('\t');
    }
    return lines.isEmpty() ? QString() : lines.join('\n') + '\n';
}

} // namespace ttrace::ui
