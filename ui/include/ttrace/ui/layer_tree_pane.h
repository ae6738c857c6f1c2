#pragma once
// Left pane of the explorer: the heat-mapped layer tree with its search box, iteration and
// micro-batch selectors, "divergent only" switch, divergence navigation and legend.
#include <QPersistentModelIndex>
#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QToolButton;
class QTreeView;

namespace ttrace::ui {

class HeatLegend;
class LayerFilterProxy;
class LayerTreeModel;

class LayerTreePane : public QWidget {
    Q_OBJECT
public:
    explicit LayerTreePane(LayerTreeModel* model, QWidget* parent = nullptr);

    [[nodiscard]] QTreeView* treeView() const { return view_; }
    [[nodiscard]] LayerFilterProxy* proxy() const { return proxy_; }
    [[nodiscard]] QLineEdit* searchBox() const { return search_; }
    [[nodiscard]] QAction* firstDivergenceAction() const { return first_; }
    [[nodiscard]] QAction* nextDivergentAction() const { return next_; }
    [[nodiscard]] QAction* previousDivergentAction() const { return previous_; }
    [[nodiscard]] QAction* divergentOnlyAction() const { return divergentOnly_; }
    [[nodiscard]] HeatLegend* legend() const { return legend_; }
    [[nodiscard]] QAction* regexAction() const { return regex_; }
    // "No module name or type matches …" (hidden while something matches).
    [[nodiscard]] QLabel* noMatchLabel() const { return noMatch_; }
    // "3 of 9 divergences": the selected module among the divergent ones.
    [[nodiscard]] QLabel* positionLabel() const { return position_; }

    // Fills the iteration and micro-batch selectors ("all" first) and keeps the current choice
    // where it still exists.
    void setSteps(const std::vector<std::int64_t>& iterations,
                  const std::vector<std::int64_t>& microBatches);
    // Selects a module's cell (clearing the search when it hides the module); returns whether
    // the module exists.
    bool selectModule(const QString& module, int column);
    // Shows one iteration (nothing: all) in the step filter, if the selector offers it.
    void setIteration(std::optional<std::int64_t> iteration);
    bool selectFirstDivergence();
    bool selectNextDivergent(bool forward);
    // Canonical name of the selected module, empty when none.
    [[nodiscard]] QString currentModule() const;
    // The tensor the selected cell shows.
    [[nodiscard]] std::optional<std::size_t> currentTensor() const;
    // Re-applies filter and sort (after loading finished) and shows the heat of the top levels.
    void refresh();

signals:
    void currentTensorChanged(std::optional<std::size_t> tensor);
    void currentModuleChanged(const QString& module);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override; // Esc clears the filter

private:
    void createNavigationActions();
    void createFilterWidgets();
    void layOut();
    void connectViewAndModel();
    void applySearch();
    void updatePosition();
    void applyStepFilter();
    void updateNavigation();
    void updateScale();
    QModelIndex currentSourceIndex() const;

    LayerTreeModel* model_;
    QLineEdit* search_;
    QComboBox* iteration_;
    QComboBox* microBatch_;
    QTreeView* view_;
    LayerFilterProxy* proxy_;
    HeatLegend* legend_;
    QAction* first_;
    QAction* previous_;
    QAction* next_;
    QAction* divergentOnly_;
    QAction* regex_;
    QLabel* noMatch_;
    QLabel* position_;
    QPersistentModelIndex lastSelected_; // in the source model: survives filtering
};

} // namespace ttrace::ui
