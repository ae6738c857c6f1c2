#pragma once
// The run's phases in time, one cell per iteration and phase of the training step (forward,
// backward, gradient reduction, optimizer step: the phases the report's timeline places every
// tensor in, core's timePlaceOf), each with the worst ratio in it and the tensor a click jumps
// to. Gradient clipping is no phase of its own in a bundle: its effect shows in the optimizer
// step's tensors. The phase timeline strip paints these cells.
#include "ttrace/compare/diff_result.h"

#include <QString>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ttrace::ui {

struct PhaseCell {
    std::int64_t iteration = 0;
    Phase phase = Phase::Forward;
    double worstRatio = 0.0;   // the worst ratio of a compared tensor placed here
    std::size_t compared = 0;  // tensors compared (clean or divergent)
    std::size_t divergent = 0; // of them, beyond their tolerance
    std::size_t invalid = 0;   // tensors placed here that could not be compared
    // Where a click goes: the first divergent tensor in time here, else the worst one.
    std::optional<std::size_t> target;
    bool firstDivergence = false; // holds the run's first divergence (the headline's)
};

// Cells in time order (iteration, then phase); phases with no tensor recorded are left out.
std::vector<PhaseCell> phaseCells(const DiffResult& diff);

// "it 0 · grad reduction": the cell's short label.
QString phaseCellLabel(const PhaseCell& cell);
// The cell's tooltip: counts, worst ratio, the first divergence when it is here.
QString phaseCellToolTip(const PhaseCell& cell, const DiffResult& diff);

} // namespace ttrace::ui
