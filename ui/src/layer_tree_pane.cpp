#include "ttrace/ui/layer_tree_pane.h"

#include "ttrace/ui/heat_cell_delegate.h"
#include "ttrace/ui/heat_legend.h"
#include "ttrace/ui/layer_tree_view.h"
#include "ttrace/ui/models/layer_filter_proxy.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/roles.h"
#include "ttrace/ui/tree_view_setup.h"

#include <QAction>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QStyle>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <cmath>

namespace ttrace::ui {
namespace {

constexpr qlonglong kAll = -1;

std::optional<std::int64_t> choice(const QComboBox* box) {
    const auto v = box->currentData().toLongLong();
    return v == kAll ? std::nullopt : std::optional<std::int64_t>(v);
}

void fill(QComboBox* box, const QString& allText, const QString& itemText,
          const std::vector<std::int64_t>& values) {
    const auto previous = box->currentData();
    const QSignalBlocker block(box);
    box->clear();
    box->addItem(allText, kAll);
    for (const auto v : values) {
        box->addItem(itemText.arg(v), static_cast<qlonglong>(v));
    }
    const int again = previous.isValid() ? box->findData(previous) : 0;
    box->setCurrentIndex(std::max(again, 0));
    box->setEnabled(values.size() > 1);
}

} // namespace

LayerTreePane::LayerTreePane(LayerTreeModel* model, QWidget* parent)
    : QWidget(parent)
    , model_(model)
    , search_(new QLineEdit(this))
    , iteration_(new QComboBox(this))
    , microBatch_(new QComboBox(this))
    , view_(new LayerTreeView(this))
    , legend_(new HeatLegend(this)) {
    setObjectName(QStringLiteral("layerTreePane"));
    view_->setObjectName(QStringLiteral("layerTree"));
    search_->setObjectName(QStringLiteral("moduleSearch"));
    search_->setPlaceholderText(tr("Filter by name or type (e.g. mlp.fc2, RMSNorm)"));
    search_->setToolTip(tr("Shows modules whose name or type contains the text (Esc clears)"));
    search_->setClearButtonEnabled(true);
    search_->installEventFilter(this);
    iteration_->setObjectName(QStringLiteral("iterationSelector"));
    microBatch_->setObjectName(QStringLiteral("microBatchSelector"));
    iteration_->setToolTip(tr("Iteration shown in the tree (\"all\": worst over every iteration)"));
    microBatch_->setToolTip(
        tr("Micro-batch shown in the tree (\"all\": worst over every micro-batch); once-per-"
           "iteration tensors such as main grads are always shown"));
    proxy_ = setupLayerTreeView(view_, model_, nullptr);
    setSteps({}, {});

    createNavigationActions();
    createFilterWidgets();
    layOut();
    connectViewAndModel();
    updateNavigation();
}

// First, previous and next divergence, and the divergent-only filter.
void LayerTreePane::createNavigationActions() {
    first_ = new QAction(style()->standardIcon(QStyle::SP_MediaSkipBackward),
                         tr("First Divergence"), this);
    first_->setShortcut(Qt::CTRL | Qt::Key_Home);
    first_->setIconText(tr("First"));
    first_->setToolTip(tr("Select the module where the run first diverges (Ctrl+Home)"));
    previous_ =
        new QAction(style()->standardIcon(QStyle::SP_ArrowUp), tr("Previous Divergent"), this);
    previous_->setShortcut(Qt::CTRL | Qt::Key_Up);
    previous_->setIconText(tr("Previous"));
    previous_->setToolTip(tr("Previous divergent module in execution order (Ctrl+Up)"));
    next_ = new QAction(style()->standardIcon(QStyle::SP_ArrowDown), tr("Next Divergent"), this);
    next_->setShortcut(Qt::CTRL | Qt::Key_Down);
    next_->setIconText(tr("Next"));
    next_->setToolTip(tr("Next divergent module in execution order (Ctrl+Down)"));
    divergentOnly_ = new QAction(tr("Divergent only"), this);
    divergentOnly_->setCheckable(true);
    divergentOnly_->setToolTip(tr("Show only modules whose own tensors exceed their tolerance"));
    connect(first_, &QAction::triggered, this, &LayerTreePane::selectFirstDivergence);
    connect(next_, &QAction::triggered, this, [this] { selectNextDivergent(true); });
    connect(previous_, &QAction::triggered, this, [this] { selectNextDivergent(false); });
    connect(divergentOnly_, &QAction::toggled, this, [this](bool on) {
        proxy_->setDivergentOnly(on);
        if (on) {
            view_->expandAll();
        }
    });
}

// The regular-expression switch, the no-match note and the divergence position.
void LayerTreePane::createFilterWidgets() {
    regex_ = new QAction(QStringLiteral(".*"), this);
    regex_->setObjectName(QStringLiteral("regexSearchAction"));
    regex_->setCheckable(true);
    regex_->setToolTip(tr("Filter with a regular expression (on names and types)"));
    noMatch_ = new QLabel(this);
    noMatch_->setObjectName(QStringLiteral("filterNoMatch"));
    noMatch_->setStyleSheet(QStringLiteral("color: #92400e;"));
    noMatch_->setWordWrap(true);
    noMatch_->hide();
    position_ = new QLabel(this);
    position_->setObjectName(QStringLiteral("divergencePosition"));
    // Room for the longest text from the start: the toolbar lays it out once.
    position_->setMinimumWidth(
        position_->fontMetrics().horizontalAdvance(tr("%1 of %2 divergences").arg(888).arg(888)) +
        12);
    position_->setAlignment(Qt::AlignCenter);
    position_->setToolTip(tr("The selected module's place among the divergent modules, in "
                             "execution order"));
    connect(search_, &QLineEdit::textChanged, this, &LayerTreePane::applySearch);
    connect(regex_, &QAction::toggled, this, &LayerTreePane::applySearch);
    connect(this, &LayerTreePane::currentModuleChanged, this, &LayerTreePane::updatePosition);
}

// The filters above the tree, the tree, the heat legend below.
void LayerTreePane::layOut() {
    auto* divergentButton = new QToolButton(this);
    divergentButton->setDefaultAction(divergentOnly_);
    auto* regexButton = new QToolButton(this);
    regexButton->setDefaultAction(regex_);
    auto* filters = new QHBoxLayout;
    filters->setSpacing(6);
    filters->addWidget(search_, 1);
    filters->addWidget(regexButton);
    filters->addWidget(iteration_);
    filters->addWidget(microBatch_);
    filters->addWidget(divergentButton);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 0, 6);
    layout->setSpacing(6);
    layout->addLayout(filters);
    layout->addWidget(noMatch_);
    layout->addWidget(view_, 1);
    layout->addWidget(legend_);
}

// The step filter, the selection and the model's changes.
void LayerTreePane::connectViewAndModel() {
    connect(iteration_, &QComboBox::currentIndexChanged, this, &LayerTreePane::applyStepFilter);
    connect(microBatch_, &QComboBox::currentIndexChanged, this, &LayerTreePane::applyStepFilter);
    connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current, const QModelIndex& previous) {
                if (current.isValid()) {
                    lastSelected_ = proxy_->mapToSource(current);
                }
                const auto module = current.data(ModuleNameRole).toString();
                if (module != previous.data(ModuleNameRole).toString()) {
                    emit currentModuleChanged(module);
                }
                emit currentTensorChanged(currentTensor());
            });
    connect(model_, &LayerTreeModel::resultsChanged, this, [this] {
        updateNavigation();
        updateScale();
    });
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
        view_->expandToDepth(1);
        updateNavigation();
    });
}

void LayerTreePane::setSteps(const std::vector<std::int64_t>& iterations,
                             const std::vector<std::int64_t>& microBatches) {
    fill(iteration_, tr("All iterations"), tr("Iteration %1"), iterations);
    fill(microBatch_, tr("All micro-batches"), tr("Micro-batch %1"), microBatches);
    applyStepFilter();
}

void LayerTreePane::setIteration(std::optional<std::int64_t> iteration) {
    const int at = iteration ? iteration_->findData(static_cast<qlonglong>(*iteration)) : 0;
    if (at >= 0) {
        iteration_->setCurrentIndex(at); // applies the filter through currentIndexChanged
    }
}

void LayerTreePane::applyStepFilter() {
    const auto before = currentTensor();
    model_->setStepFilter({choice(iteration_), choice(microBatch_)});
    if (proxy_->divergentOnly()) {
        proxy_->invalidate();
    }
    if (currentTensor() != before) {
        emit currentTensorChanged(currentTensor());
    }
}

void LayerTreePane::refresh() {
    proxy_->invalidate();
    view_->expandToDepth(1);
    updateNavigation();
}

QModelIndex LayerTreePane::currentSourceIndex() const {
    return proxy_->mapToSource(view_->currentIndex());
}

QString LayerTreePane::currentModule() const {
    return currentSourceIndex().data(ModuleNameRole).toString();
}

std::optional<std::size_t> LayerTreePane::currentTensor() const {
    return model_->tensorAt(currentSourceIndex());
}

bool LayerTreePane::selectModule(const QString& module, int column) {
    const QModelIndex source = model_->indexOfModule(module, column);
    if (!source.isValid()) {
        return false;
    }
    QModelIndex index = proxy_->mapFromSource(source);
    if (!index.isValid()) {
        search_->clear();
        divergentOnly_->setChecked(false);
        index = proxy_->mapFromSource(source);
    }
    for (QModelIndex p = index.parent(); p.isValid(); p = p.parent()) {
        view_->expand(p);
    }
    view_->setCurrentIndex(index);
    view_->scrollTo(index, QAbstractItemView::PositionAtCenter);
    return index.isValid();
}

bool LayerTreePane::selectFirstDivergence() {
    const QString module = model_->firstDivergentModule();
    return !module.isEmpty() && selectModule(module, model_->divergentColumn(module));
}

bool LayerTreePane::selectNextDivergent(bool forward) {
    const QStringList divergent = model_->divergentModules();
    if (divergent.isEmpty()) {
        return false;
    }
    const QString current = currentModule();
    QString target;
    if (current.isEmpty()) {
        target = forward ? divergent.front() : divergent.back();
    } else if (const auto at = divergent.indexOf(current); at >= 0) {
        const auto next = at + (forward ? 1 : -1);
        target = divergent.value(static_cast<int>((next + divergent.size()) % divergent.size()));
    } else {
        // Not divergent itself: the nearest divergent module in execution order.
        const int order = model_->indexOfModule(current).data(ModuleOrderRole).toInt();
        target = forward ? divergent.front() : divergent.back();
        for (const auto& name : divergent) {
            const int o = model_->indexOfModule(name).data(ModuleOrderRole).toInt();
            if (forward && o > order) {
                target = name;
                break;
            }
            if (!forward && o < order) {
                target = name;
            }
        }
    }
    return selectModule(target, model_->divergentColumn(target));
}

void LayerTreePane::applySearch() {
    // The selection made before the filter hid it (a filter that hides a row drops it).
    const QModelIndex selected = lastSelected_;
    const QString text = search_->text();
    proxy_->setSearch(text, regex_->isChecked());
    if (!text.isEmpty()) {
        view_->expandAll();
    } else if (selected.isValid()) {
        // Clearing the filter keeps the selection where it was, in view.
        const QModelIndex again = proxy_->mapFromSource(selected);
        for (QModelIndex p = again.parent(); p.isValid(); p = p.parent()) {
            view_->expand(p);
        }
        view_->setCurrentIndex(again);
        view_->scrollTo(again, QAbstractItemView::PositionAtCenter);
    }
    const QString error = proxy_->searchError();
    QString why;
    if (!text.isEmpty() && !error.isEmpty()) {
        why = tr("Invalid regular expression: %1").arg(error);
    } else if (!text.isEmpty() && proxy_->rowCount() == 0) {
        why = tr("No module name or type matches \u201c%1\u201d (Esc clears)").arg(text);
    }
    noMatch_->setText(why);
    noMatch_->setVisible(!why.isEmpty());
}

bool LayerTreePane::eventFilter(QObject* watched, QEvent* event) {
    if (watched == search_ && event->type() == QEvent::KeyPress &&
        static_cast<QKeyEvent*>(event)->key() == Qt::Key_Escape && !search_->text().isEmpty()) {
        search_->clear();
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

void LayerTreePane::updatePosition() {
    const QStringList divergent = model_->divergentModules();
    if (divergent.isEmpty()) {
        position_->clear();
        return;
    }
    const auto at = divergent.indexOf(currentModule());
    position_->setText(at >= 0 ? tr("%1 of %2 divergences").arg(at + 1).arg(divergent.size())
                               : tr("%1 divergences").arg(divergent.size()));
}

void LayerTreePane::updateScale() {
    // The worst finite ratio of the run: the scale reaches it, so the worst cells differ.
    double worst = 0.0;
    for (const auto& t : model_->results().tensors()) {
        if (t.status == Status::Divergent && std::isfinite(t.ratio)) {
            worst = std::max(worst, t.ratio);
        }
    }
    const HeatScale scale = HeatScale::spanning(worst);
    if (scale == legend_->scale()) {
        return;
    }
    legend_->setScale(scale);
    if (auto* delegate = qobject_cast<HeatCellDelegate*>(view_->itemDelegate())) {
        delegate->setScale(scale);
    }
    view_->viewport()->update();
}

void LayerTreePane::updateNavigation() {
    updatePosition();
    const bool any = !model_->divergentModules().isEmpty();
    first_->setEnabled(any);
    next_->setEnabled(any);
    previous_->setEnabled(any);
}

} // namespace ttrace::ui
