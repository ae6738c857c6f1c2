#include "ttrace/ui/models/layer_tree_model.h"

#include "ttrace/ui/models/number_format.h"
#include "ttrace/ui/models/roles.h"

#include <QCoreApplication>

#include <algorithm>
#include <climits>

namespace ttrace::ui {
namespace {

QString qstr(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

bool isNumber(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

QString statusText(Status status) {
    return qstr(statusName(status));
}

} // namespace

LayerTreeModel::LayerTreeModel(QObject* parent)
    : QAbstractItemModel(parent)
    , root_(std::make_unique<Node>()) {}

LayerTreeModel::~LayerTreeModel() = default;

void LayerTreeModel::clear() {
    beginResetModel();
    root_ = std::make_unique<Node>();
    byName_.clear();
    results_.clear();
    localize_.clear();
    endResetModel();
    emit resultsChanged();
}

void LayerTreeModel::setReplaying(const std::string& module) {
    localizeChanged(localize_.setReplaying(module));
}

void LayerTreeModel::addLocalizeVerdict(const replay::ModuleVerdict& verdict) {
    localizeChanged(localize_.add(verdict));
}

void LayerTreeModel::finishLocalize(const replay::LocalizeResult& result) {
    localizeChanged(localize_.finish(result));
}

void LayerTreeModel::clearLocalize() {
    std::vector<std::string> shown;
    for (const auto& [name, node] : byName_) {
        if (localize_.badge(name) != LocalizeBadge::None) {
            shown.push_back(name);
        }
    }
    localize_.clear();
    localizeChanged(shown);
}

void LayerTreeModel::localizeChanged(const std::vector<std::string>& modules) {
    for (const auto& name : modules) {
        if (const auto it = byName_.find(name); it != byName_.end()) {
            const QModelIndex index = indexOf(it->second, kNameColumn);
            emit dataChanged(index, index, {LocalizeBadgeRole, Qt::ToolTipRole});
        }
    }
}

void LayerTreeModel::setModules(std::vector<ModuleInfo> modules) {
    std::stable_sort(modules.begin(), modules.end(),
                     [](const ModuleInfo& a, const ModuleInfo& b) { return a.order < b.order; });
    beginResetModel();
    root_ = std::make_unique<Node>();
    byName_.clear();
    for (const auto& m : modules) {
        Node* node = ensureNode(m.name, false);
        node->isModule = true;
        node->order = std::min(node->order, m.order);
        node->depth = m.depth;
        node->type = m.type;
    }
    recomputeAll(root_.get());
    endResetModel();
    emit resultsChanged();
}

LayerTreeModel::Node* LayerTreeModel::ensureNode(const std::string& name, bool notify) {
    if (const auto it = byName_.find(name); it != byName_.end()) {
        return it->second;
    }
    Node* parent = root_.get();
    std::string prefix;
    std::size_t start = 0;
    while (start <= name.size()) {
        const auto dot = std::min(name.find('.', start), name.size());
        const std::string segment = name.substr(start, dot - start);
        prefix = prefix.empty() ? segment : prefix + "." + segment;
        Node* node = nullptr;
        if (const auto it = byName_.find(prefix); it != byName_.end()) {
            node = it->second;
        } else {
            auto child = std::make_unique<Node>();
            child->name = prefix;
            // "layers" > "layers.0" reads better than "layers" > "0".
            child->label = isNumber(segment) && parent != root_.get()
                               ? parent->label + "." + qstr(segment)
                               : qstr(segment);
            child->parent = parent;
            child->row = static_cast<int>(parent->children.size());
            child->order = INT_MAX;
            node = child.get();
            if (notify) {
                beginInsertRows(indexOf(parent, 0), child->row, child->row);
            }
            parent->children.push_back(std::move(child));
            byName_.emplace(prefix, node);
            if (notify) {
                endInsertRows();
            }
        }
        parent = node;
        start = dot + 1;
    }
    return parent;
}

void LayerTreeModel::addTensorResult(TensorResult result) {
    const std::string module = result.id.module;
    const bool shown = columnOfKind(result.id.kind).has_value();
    if (results_.add(std::move(result)) == ResultSet::npos) {
        return;
    }
    Node* node = ensureNode(module, true);
    if (!node->isModule) {
        node->isModule = true;
        emit dataChanged(indexOf(node, 0), indexOf(node, 0));
    }
    if (shown) {
        refreshAfterAdd(node);
    }
}

void LayerTreeModel::refreshAfterAdd(Node* node) {
    bool any = false;
    for (Node* n = node; n && n != root_.get(); n = n->parent) {
        if (!recompute(n)) {
            break;
        }
        any = true;
        emit dataChanged(indexOf(n, 0), indexOf(n, kLayerTreeColumnCount - 1));
    }
    if (any) {
        emit resultsChanged();
    }
}

void LayerTreeModel::setFinalResult(std::shared_ptr<const DiffResult> result) {
    if (result) {
        for (const auto& m : result->modules) {
            Node* node = ensureNode(m.name, true);
            node->isModule = true;
            node->order = std::min(node->order, m.order);
            node->depth = m.depth;
            if (node->type.empty()) {
                node->type = m.type;
            }
        }
        for (const auto& t : result->tensors) {
            ensureNode(t.id.module, true)->isModule = true;
        }
    }
    results_.setFinal(std::move(result));
    recomputeAll(root_.get());
    emitAllChanged(root_.get());
    emit resultsChanged();
}

void LayerTreeModel::setStepFilter(const StepFilter& filter) {
    if (filter == filter_) {
        return;
    }
    filter_ = filter;
    recomputeAll(root_.get());
    emitAllChanged(root_.get());
    emit resultsChanged();
}

std::optional<std::size_t> LayerTreeModel::pick(std::optional<std::size_t> a,
                                                std::optional<std::size_t> b) const {
    if (!a) {
        return b;
    }
    if (!b) {
        return a;
    }
    return ResultSet::worse(results_.tensor(*b), results_.tensor(*a)) ? b : a;
}

bool LayerTreeModel::recompute(Node* node) {
    const auto oldInclusive = node->inclusive;
    const auto oldOwn = node->own;
    node->worstOwn.reset();
    node->worstInclusive.reset();
    if (!node->isModule && !node->children.empty()) {
        // A name-only group runs when its first submodule runs.
        node->order = INT_MAX;
        for (const auto& child : node->children) {
            node->order = std::min(node->order, child->order);
        }
    }
    for (int k = 0; k < kKindColumnCount; ++k) {
        const auto i = static_cast<std::size_t>(k);
        const auto kind = *kindOfColumn(kFirstKindColumn + k);
        node->own[i] = node->isModule ? results_.worst(node->name, kind, filter_) : std::nullopt;
        auto inclusive = node->own[i];
        for (const auto& child : node->children) {
            inclusive = pick(inclusive, child->inclusive[i]);
        }
        node->inclusive[i] = inclusive;
        node->worstOwn = pick(node->worstOwn, node->own[i]);
        node->worstInclusive = pick(node->worstInclusive, inclusive);
    }
    return oldInclusive != node->inclusive || oldOwn != node->own;
}

void LayerTreeModel::recomputeAll(Node* node) {
    for (const auto& child : node->children) {
        recomputeAll(child.get());
    }
    if (node != root_.get()) {
        recompute(node);
    }
}

void LayerTreeModel::emitAllChanged(const Node* node) {
    if (node->children.empty()) {
        return;
    }
    emit dataChanged(indexOf(node->children.front().get(), 0),
                     indexOf(node->children.back().get(), kLayerTreeColumnCount - 1));
    for (const auto& child : node->children) {
        emitAllChanged(child.get());
    }
}

LayerTreeModel::Node* LayerTreeModel::nodeOf(const QModelIndex& index) const {
    return index.isValid() ? static_cast<Node*>(index.internalPointer()) : root_.get();
}

QModelIndex LayerTreeModel::indexOf(const Node* node, int column) const {
    if (!node || node == root_.get()) {
        return {};
    }
    return createIndex(node->row, column, const_cast<Node*>(node));
}

QModelIndex LayerTreeModel::index(int row, int column, const QModelIndex& parent) const {
    if (!hasIndex(row, column, parent)) {
        return {};
    }
    const Node* p = nodeOf(parent);
    return indexOf(p->children[static_cast<std::size_t>(row)].get(), column);
}

QModelIndex LayerTreeModel::parent(const QModelIndex& child) const {
    if (!child.isValid()) {
        return {};
    }
    return indexOf(nodeOf(child)->parent, 0);
}

int LayerTreeModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() && parent.column() != 0) {
        return 0;
    }
    return static_cast<int>(nodeOf(parent)->children.size());
}

int LayerTreeModel::columnCount(const QModelIndex&) const {
    return kLayerTreeColumnCount;
}

Qt::ItemFlags LayerTreeModel::flags(const QModelIndex& index) const {
    if (!index.isValid()) {
        return Qt::NoItemFlags;
    }
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable;
}

QVariant LayerTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= kLayerTreeColumnCount) {
        return {};
    }
    switch (role) {
    case Qt::DisplayRole: return columnTitle(section);
    case Qt::ToolTipRole: return columnDescription(section);
    case KindRole: {
        const auto kind = kindOfColumn(section);
        return kind ? static_cast<int>(*kind) : -1;
    }
    default: return {};
    }
}

QVariant LayerTreeModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.model() != this) {
        return {};
    }
    Q_ASSERT(checkIndex(index, CheckIndexOption::IndexIsValid));
    const Node& node = *nodeOf(index);
    switch (role) {
    case ModuleNameRole: return qstr(node.name);
    case ModuleTypeRole: return qstr(node.type);
    case ModuleOrderRole: return node.order;
    case IsModuleRole: return node.isModule;
    case KindRole: {
        const auto kind = kindOfColumn(index.column());
        return kind ? static_cast<int>(*kind) : -1;
    }
    default: break;
    }
    return index.column() == kNameColumn ? nameData(node, role)
                                         : cellData(node, index.column(), role);
}

QVariant LayerTreeModel::nameData(const Node& node, int role) const {
    const ModuleResult* module = node.isModule ? results_.module(node.name) : nullptr;
    switch (role) {
    case Qt::DisplayRole: return node.label;
    case Qt::ToolTipRole: {
        QString tip = QStringLiteral("<b>%1</b>").arg(qstr(node.name).toHtmlEscaped());
        if (!node.type.empty()) {
            tip += QStringLiteral(" (%1)").arg(qstr(node.type).toHtmlEscaped());
        }
        if (node.isModule) {
            tip += QCoreApplication::translate("LayerTreeModel", "<br>execution order %1, depth %2")
                       .arg(node.order)
                       .arg(node.depth);
        }
        if (module && module->origin != Origin::None) {
            tip += QCoreApplication::translate("LayerTreeModel", "<br>divergence %1")
                       .arg(qstr(originName(module->origin)));
        }
        if (const auto* v = localize_.verdict(node.name)) {
            tip +=
                QCoreApplication::translate("LayerTreeModel",
                                            "<br>replay of iteration %4, %5: %1 (ratio %2)%3")
                    .arg(localizeBadgeText(localize_.badge(node.name)), formatRatio(v->ratio),
                         v->reason.empty() ? QString()
                                           : QStringLiteral(": ") + qstr(v->reason).toHtmlEscaped())
                    .arg(v->suspect.iteration)
                    .arg(qstr(replay::localizePhaseName(v->suspect.phase)));
        }
        return tip;
    }
    case StatusRole: {
        const auto t = node.isModule ? node.worstOwn : node.worstInclusive;
        return t ? static_cast<int>(results_.tensor(*t).status) : QVariant();
    }
    case OriginRole: return static_cast<int>(module ? module->origin : Origin::None);
    case LocalizeBadgeRole: return static_cast<int>(localize_.badge(node.name));
    case AggregateRole: return !node.isModule;
    case TensorIndexRole:
        return node.worstInclusive ? static_cast<qlonglong>(*node.worstInclusive) : -1LL;
    case SortRole: return node.order;
    default: return {};
    }
}

QVariant LayerTreeModel::cellData(const Node& node, int column, int role) const {
    std::optional<std::size_t> tensor;
    bool aggregate = false;
    if (column == kWorstColumn) {
        tensor = node.worstInclusive;
        aggregate = tensor && tensor != node.worstOwn;
    } else {
        const auto k = static_cast<std::size_t>(column - kFirstKindColumn);
        tensor = node.own[k] ? node.own[k] : node.inclusive[k];
        aggregate = !node.own[k] && tensor;
    }
    if (role == AggregateRole) {
        return aggregate;
    }
    if (role == TensorIndexRole) {
        return tensor ? static_cast<qlonglong>(*tensor) : -1LL;
    }
    if (role == Qt::TextAlignmentRole) {
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    }
    if (!tensor) {
        return role == SortRole ? QVariant(-1.0) : QVariant();
    }
    const TensorResult& t = results_.tensor(*tensor);
    switch (role) {
    case Qt::DisplayRole:
        return t.status == Status::Missing      ? QStringLiteral("missing")
               : t.status == Status::Invalid    ? QStringLiteral("invalid")
               : t.status == Status::Unresolved ? QStringLiteral("unresolved")
                                                : formatRatio(t.ratio);
    case Qt::ToolTipRole: {
        QString tip = QStringLiteral("<b>%1</b><br>").arg(qstr(t.id.label()).toHtmlEscaped());
        tip += QCoreApplication::translate("LayerTreeModel",
                                           "ratio %1 = error %2 / tolerance %3 (%4)<br>status %5")
                   .arg(formatRatio(t.ratio), formatScientific(t.metrics.relError),
                        formatScientific(t.tolerance.value), qstr(t.tolerance.source.name()),
                        statusText(t.status));
        if (aggregate) {
            tip +=
                QCoreApplication::translate("LayerTreeModel", "<br><i>worst of the submodules</i>");
        }
        return tip;
    }
    case RatioRole:
    case SortRole: return t.ratio;
    case ErrorRole: return t.metrics.relError;
    case ToleranceRole: return t.tolerance.value;
    case StatusRole: return static_cast<int>(t.status);
    default: return {};
    }
}

QModelIndex LayerTreeModel::indexOfModule(const QString& name, int column) const {
    const auto it = byName_.find(name.toStdString());
    return it == byName_.end() ? QModelIndex() : indexOf(it->second, column);
}

std::optional<std::size_t> LayerTreeModel::tensorAt(const QModelIndex& index) const {
    const auto v = data(index, TensorIndexRole);
    if (!v.isValid() || v.toLongLong() < 0) {
        return std::nullopt;
    }
    return static_cast<std::size_t>(v.toLongLong());
}

bool LayerTreeModel::isDivergent(std::optional<std::size_t> tensor) const {
    if (!tensor) {
        return false;
    }
    const auto status = results_.tensor(*tensor).status;
    return isFlagged(status);
}

QStringList LayerTreeModel::divergentModules() const {
    std::vector<const Node*> found;
    std::vector<const Node*> stack{root_.get()};
    while (!stack.empty()) {
        const Node* n = stack.back();
        stack.pop_back();
        if (n->isModule && isDivergent(n->worstOwn)) {
            found.push_back(n);
        }
        for (const auto& c : n->children) {
            stack.push_back(c.get());
        }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const Node* a, const Node* b) { return a->order < b->order; });
    QStringList names;
    for (const Node* n : found) {
        names << qstr(n->name);
    }
    return names;
}

QString LayerTreeModel::firstDivergentModule() const {
    if (const DiffResult* r = results_.final()) {
        // The first on the run's timeline, then the first by kind.
        const std::optional<std::string> timeline =
            r->firstDivergence ? std::optional<std::string>(r->firstDivergence->module)
                               : std::nullopt;
        for (const auto& candidate :
             {timeline, r->firstForwardDivergence, r->firstBackwardDivergence}) {
            if (candidate && byName_.count(*candidate)) {
                return qstr(*candidate);
            }
        }
    }
    const auto all = divergentModules();
    return all.isEmpty() ? QString() : all.front();
}

int LayerTreeModel::divergentColumn(const QString& module) const {
    const auto it = byName_.find(module.toStdString());
    if (it == byName_.end()) {
        return kWorstColumn;
    }
    for (int k = 0; k < kKindColumnCount; ++k) {
        if (isDivergent(it->second->own[static_cast<std::size_t>(k)])) {
            return kFirstKindColumn + k;
        }
    }
    return kWorstColumn;
}

} // namespace ttrace::ui
