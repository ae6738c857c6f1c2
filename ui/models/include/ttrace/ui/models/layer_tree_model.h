#pragma once
// The layer tree: a thin QAbstractItemModel over the comparison results. Rows are the module
// hierarchy (canonical names split on '.') in execution order; columns are the module name, its
// worst ratio, and one column per tensor kind. The tree is built from the bundles' manifests
// first, so it appears before any statistics; results then stream in and fill the cells.
//
// The model exposes numbers and states through the custom roles in roles.h, never colours.
// A kind cell shows the module's own worst tensor of that kind under the step filter; a module
// without tensors of a kind (or a name-only group such as "layers") shows the worst of its
// descendants instead, flagged by AggregateRole, so a collapsed branch still shows its heat.
#include "ttrace/io/manifest.h"
#include "ttrace/ui/models/localize_verdicts.h"
#include "ttrace/ui/models/result_set.h"
#include "ttrace/ui/models/step_filter.h"
#include "ttrace/ui/models/tensor_columns.h"

#include <QAbstractItemModel>
#include <QStringList>

#include <array>
#include <memory>
#include <optional>
#include <unordered_map>

namespace ttrace::ui {

class LayerTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    explicit LayerTreeModel(QObject* parent = nullptr);
    ~LayerTreeModel() override;

    // Drops everything (a new pair of bundles is being opened).
    void clear();
    // Builds the tree from module metadata (any order; sorted by execution order here).
    void setModules(std::vector<ModuleInfo> modules);
    // A result streamed in from the engine's worker threads (delivered on the GUI thread).
    void addTensorResult(TensorResult result);
    // The engine's final result replaces the streamed ones; the tree keeps its rows.
    void setFinalResult(std::shared_ptr<const DiffResult> result);
    // Drops every result (streamed or final); the tree keeps its rows.
    void clearResults() { setFinalResult(nullptr); }
    void setStepFilter(const StepFilter& filter);
    [[nodiscard]] const StepFilter& stepFilter() const { return filter_; }
    [[nodiscard]] const ResultSet& results() const { return results_; }

    // Replay verdicts (badges of the name column); cleared with the results.
    [[nodiscard]] const LocalizeVerdicts& localize() const { return localize_; }
    void setReplaying(const std::string& module);
    void addLocalizeVerdict(const replay::ModuleVerdict& verdict);
    void finishLocalize(const replay::LocalizeResult& result);
    void clearLocalize();

    [[nodiscard]] QModelIndex indexOfModule(const QString& name, int column = kNameColumn) const;
    // The tensor a cell shows (its worst under the step filter), if any.
    [[nodiscard]] std::optional<std::size_t> tensorAt(const QModelIndex& index) const;
    // Captured modules whose own tensors diverge under the step filter, in execution order.
    [[nodiscard]] QStringList divergentModules() const;
    // Where the run first diverges: the engine's first forward divergence, else its first
    // backward divergence, else the first divergent module in execution order.
    [[nodiscard]] QString firstDivergentModule() const;
    // The most telling divergent cell of a module: the first divergent kind column in reading
    // order (forward output first), else the worst column.
    [[nodiscard]] int divergentColumn(const QString& module) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;

signals:
    // Cells changed (streamed results, final results or a new step filter).
    void resultsChanged();

private:
    struct Node {
        QString label;
        std::string name; // canonical name (a prefix of module names for groups)
        Node* parent = nullptr;
        int row = 0;
        std::vector<std::unique_ptr<Node>> children;
        bool isModule = false;
        int order = 0;
        int depth = 0;
        std::string type;
        std::array<std::optional<std::size_t>, kKindColumnCount> own;       // this module's
        std::array<std::optional<std::size_t>, kKindColumnCount> inclusive; // incl. descendants
        std::optional<std::size_t> worstOwn;
        std::optional<std::size_t> worstInclusive;
    };

    Node* ensureNode(const std::string& name, bool notify);
    Node* nodeOf(const QModelIndex& index) const;
    QModelIndex indexOf(const Node* node, int column) const;
    // Recomputes a node's cells; returns whether anything it shows changed.
    bool recompute(Node* node);
    void recomputeAll(Node* node);
    void emitAllChanged(const Node* node);
    void refreshAfterAdd(Node* node);
    std::optional<std::size_t> pick(std::optional<std::size_t> a,
                                    std::optional<std::size_t> b) const;
    [[nodiscard]] bool isDivergent(std::optional<std::size_t> tensor) const;
    QVariant nameData(const Node& node, int role) const;
    QVariant cellData(const Node& node, int column, int role) const;
    void localizeChanged(const std::vector<std::string>& modules);

    std::unique_ptr<Node> root_;
    std::unordered_map<std::string, Node*> byName_;
    ResultSet results_;
    StepFilter filter_;
    LocalizeVerdicts localize_;
};

} // namespace ttrace::ui
