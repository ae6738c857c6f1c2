#pragma once
// The element view of the selected tensor, as RenderDoc shows pixels: its elements with the
// largest error (index, reference, candidate, error, element tolerance) and its error along a
// chosen dimension (heads, sequence, hidden...). Both tensors are read through the engine's
// merge on a worker thread (ElementInspector), with progress and Cancel; the view inspects a
// tensor when it is shown, never while hidden.
#include <QString>
#include <QWidget>

#include <optional>

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace ttrace {
struct ElementReport;
}

namespace ttrace::ui {

class ElementInspector;
class ElementTableModel;
class LayerTreeModel;
class ProgressCancelWidget;
class SliceErrorPlot;

class ElementView : public QWidget {
    Q_OBJECT
public:
    explicit ElementView(const LayerTreeModel* model, QWidget* parent = nullptr);

    void setBundles(const QString& reference, const QString& candidate);
    // No bundles to read (a result opened from a report): every inspection says `why` instead.
    void setUnavailable(const QString& why);
    // The tensor to inspect (an index into the model's results); inspected now if shown.
    void showTensor(std::optional<std::size_t> tensor);
    // Inspects the current tensor along the chosen dimension now.
    void inspect();

    [[nodiscard]] ElementInspector* inspector() const { return inspector_; }
    [[nodiscard]] ElementTableModel* tableModel() const { return table_; }
    [[nodiscard]] SliceErrorPlot* slicePlot() const { return slices_; }
    [[nodiscard]] QComboBox* dimensionBox() const { return dimension_; }
    [[nodiscard]] QLabel* statusLabel() const { return status_; }
    // The inspection's bar and Cancel: the same widget as loading's, localize's and export's.
    [[nodiscard]] ProgressCancelWidget* progress() const { return progress_; }
    void replotNow();

signals:
    void reportShown(); // a finished inspection is on screen (or its problem)

protected:
    void showEvent(QShowEvent* event) override;

private:
    void onFinished(const ttrace::ElementReport& report);
    void fillDimensions();

    const LayerTreeModel* model_;
    ElementInspector* inspector_;
    ElementTableModel* table_;
    QLabel* title_;
    QLabel* status_;
    QComboBox* dimension_;
    QPushButton* run_;
    ProgressCancelWidget* progress_;
    QTableView* view_;
    SliceErrorPlot* slices_;
    QString reference_;
    QString candidate_;
    QString unavailable_; // why elements cannot be read; empty when they can
    std::optional<std::size_t> tensor_;
    std::optional<std::size_t> inspected_; // the tensor the table shows
    int inspectedDimension_ = -2;
};

} // namespace ttrace::ui
