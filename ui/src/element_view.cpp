#include "ttrace/ui/element_view.h"

#include "ttrace/ui/models/element_inspector.h"
#include "ttrace/ui/models/element_table_model.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/number_format.h"
#include "ttrace/ui/models/tensor_columns.h"
#include "ttrace/ui/progress_cancel_widget.h"
#include "ttrace/ui/slice_error_plot.h"

#include <QAction>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace ttrace::ui {
namespace {

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

bool comparable(Status s) {
    return s == Status::Clean || s == Status::Divergent;
}

} // namespace

ElementView::ElementView(const LayerTreeModel* model, QWidget* parent)
    : QWidget(parent)
    , model_(model)
    , inspector_(new ElementInspector(this))
    , table_(new ElementTableModel(this))
    , title_(new QLabel(this))
    , status_(new QLabel(this))
    , dimension_(new QComboBox(this))
    , run_(new QPushButton(tr("Inspect"), this))
    , progress_(
          new ProgressCancelWidget(new QAction(tr("Cancel Inspection"), this), tr("Cancel"), this))
    , view_(new QTableView(this))
    , slices_(new SliceErrorPlot(this)) {
    setObjectName(QStringLiteral("elementView"));
    dimension_->setObjectName(QStringLiteral("sliceDimension"));
    dimension_->setToolTip(tr("The dimension to show the error along (heads, sequence, hidden…)"));
    status_->setObjectName(QStringLiteral("elementStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    title_->setStyleSheet(QStringLiteral("font-weight: bold;"));
    progress_->bar()->setMaximumWidth(160);
    progress_->bar()->setTextVisible(false);
    view_->setModel(table_);
    view_->setObjectName(QStringLiteral("elementTable"));
    view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);

    auto* controls = new QHBoxLayout;
    controls->addWidget(title_, 1);
    controls->addWidget(new QLabel(tr("Slice along:"), this));
    controls->addWidget(dimension_);
    controls->addWidget(run_);
    controls->addWidget(progress_);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(view_);
    split->addWidget(slices_);
    split->setChildrenCollapsible(false);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(split, 1);

    connect(run_, &QPushButton::clicked, this, &ElementView::inspect);
    connect(progress_->cancelAction(), &QAction::triggered, inspector_, &ElementInspector::cancel);
    connect(dimension_, &QComboBox::activated, this, [this] { inspect(); });
    connect(inspector_, &ElementInspector::started, this, [this] {
        progress_->begin(1000);
        status_->setText(tr("Reading the tensor from both bundles…"));
    });
    connect(inspector_, &ElementInspector::progress, this,
            [this](double f) { progress_->setValue(static_cast<int>(f * 1000.0)); });
    connect(inspector_, &ElementInspector::finished, this, &ElementView::onFinished);
    showTensor(std::nullopt);
}

void ElementView::setBundles(const QString& reference, const QString& candidate) {
    inspector_->cancel();
    reference_ = reference;
    candidate_ = candidate;
    unavailable_.clear();
    run_->setEnabled(true);
    showTensor(std::nullopt);
}

void ElementView::setUnavailable(const QString& why) {
    inspector_->cancel();
    reference_.clear();
    candidate_.clear();
    unavailable_ = why;
    run_->setEnabled(false);
    showTensor(std::nullopt);
}

void ElementView::fillDimensions() {
    const QSignalBlocker block(dimension_);
    const int previous =
        dimension_->currentData().isValid() ? dimension_->currentData().toInt() : -2;
    dimension_->clear();
    dimension_->addItem(tr("(none)"), -1);
    if (tensor_) {
        const auto& shape = model_->results().tensor(*tensor_).shape;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            dimension_->addItem(tr("dim %1 (size %2)").arg(d).arg(shape[d]), static_cast<int>(d));
        }
        // Keep the dimension chosen for the previous tensor where it exists; else the last
        // one (hidden units, a head's features).
        const int keep = dimension_->findData(previous);
        dimension_->setCurrentIndex(previous >= 0 && keep >= 0 ? keep : dimension_->count() - 1);
    }
}

void ElementView::showTensor(std::optional<std::size_t> tensor) {
    if (tensor && *tensor >= model_->results().size()) {
        tensor.reset();
    }
    tensor_ = tensor;
    fillDimensions();
    if (!tensor) {
        inspector_->cancel();
        title_->setText(tr("No tensor selected"));
        status_->setText(unavailable_.isEmpty()
                             ? tr("Select a cell in the layer tree to see its worst elements.")
                             : tr("Element-level drill-down is unavailable: %1").arg(unavailable_));
        table_->clear();
        slices_->setSlices({}, -1);
        inspected_.reset();
        return;
    }
    const auto& t = model_->results().tensor(*tensor);
    title_->setText(QStringLiteral("%1 · %2[%3] · %4")
                        .arg(qstr(t.id.module), kindTitle(t.id.kind), qstr(t.id.index),
                             qstr(shapeToString(t.shape))));
    if (isVisible() || !unavailable_.isEmpty()) {
        inspect();
    } else {
        status_->setText(tr("Shown when this view is open."));
    }
}

void ElementView::inspect() {
    if (tensor_ && !unavailable_.isEmpty()) {
        table_->clear();
        slices_->setSlices({}, -1);
        status_->setText(tr("Element-level drill-down is unavailable: %1").arg(unavailable_));
        emit reportShown();
        return;
    }
    if (!tensor_ || reference_.isEmpty() || candidate_.isEmpty()) {
        return;
    }
    const auto& t = model_->results().tensor(*tensor_);
    if (!comparable(t.status)) {
        table_->clear();
        slices_->setSlices({}, -1);
        status_->setText(tr("This tensor was not compared (%1): there are no element pairs to "
                            "show; its drill-down says why.")
                             .arg(qstr(std::string(statusName(t.status)))));
        return;
    }
    ElementQuery query;
    query.id = t.id;
    query.tolerance = t.tolerance.value;
    query.dimension = dimension_->currentData().toInt();
    inspectedDimension_ = query.dimension;
    inspected_ = tensor_;
    inspector_->start(reference_, candidate_, std::move(query));
}

void ElementView::onFinished(const ElementReport& report) {
    progress_->end();
    if (report.cancelled) {
        status_->setText(tr("Cancelled."));
        inspected_.reset();
    } else if (!report.problems.empty()) {
        table_->clear();
        slices_->setSlices({}, -1);
        status_->setText(
            tr("Cannot read the elements: %1").arg(qstr(report.problems.front().toString())));
    } else {
        table_->setReport(report);
        slices_->setSlices(report.slices, report.dimension);
        status_->setText(tr("%n worst element(s) of %1; element tolerance %2 (the tensor's "
                            "relative tolerance × the reference's RMS)",
                            nullptr, static_cast<int>(report.largest.size()))
                             .arg(shapeToString(report.shape).c_str())
                             .arg(formatScientific(report.elementTolerance)));
    }
    emit reportShown();
}

void ElementView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // Opened on a tensor it has not inspected yet: inspect it now.
    if (tensor_ &&
        (inspected_ != tensor_ || inspectedDimension_ != dimension_->currentData().toInt())) {
        inspect();
    }
}

void ElementView::replotNow() {
    slices_->replotNow();
}

} // namespace ttrace::ui
