#pragma once
// A strip across the window with one cell per iteration and phase of the training step
// (forward, backward, gradient reduction, optimizer step), coloured by the worst ratio in it on
// the tree's heat scale, the run's first divergence outlined and marked; a click selects the
// tensor where that phase first diverges (or its worst one), as a profiler's timeline jumps to
// a frame.
#include "ttrace/compare/diff_result.h"
#include "ttrace/ui/models/color_scale.h"
#include "ttrace/ui/models/phase_cells.h"

#include <QWidget>

#include <memory>

namespace ttrace::ui {

class PhaseTimeline : public QWidget {
    Q_OBJECT
public:
    explicit PhaseTimeline(QWidget* parent = nullptr);

    // Shows the result's cells (nothing: an empty strip, hidden).
    void setResult(std::shared_ptr<const DiffResult> result, const HeatScale& scale);
    void clear();
    [[nodiscard]] const std::vector<PhaseCell>& cells() const { return cells_; }
    // Where cell `i` is drawn, in widget coordinates.
    [[nodiscard]] QRect cellRect(std::size_t i) const;
    [[nodiscard]] QSize sizeHint() const override;
    [[nodiscard]] QSize minimumSizeHint() const override;

signals:
    // The user clicked a cell: select this tensor (an index into the result's tensors).
    void tensorActivated(std::size_t tensor);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override; // tooltips per cell

private:
    [[nodiscard]] int cellAt(const QPoint& pos) const;
    [[nodiscard]] QColor cellColor(const PhaseCell& cell) const;

    std::shared_ptr<const DiffResult> result_;
    std::vector<PhaseCell> cells_;
    HeatScale scale_;
};

} // namespace ttrace::ui
