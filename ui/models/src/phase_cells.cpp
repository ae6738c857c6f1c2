#include "ttrace/ui/models/phase_cells.h"

#include "ttrace/io/time_place.h"
#include "ttrace/ui/models/number_format.h"
#include "ttrace/ui/models/tensor_columns.h"

#include <QCoreApplication>

#include <cmath>
#include <map>

namespace ttrace::ui {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("PhaseTimeline", text);
}

QString shortPhase(Phase phase) {
    switch (phase) {
    case Phase::Forward: return tr("forward");
    case Phase::Backward: return tr("backward");
    case Phase::GradReduction: return tr("grad reduction");
    case Phase::OptimizerStep: return tr("optimizer step");
    }
    return {};
}

bool compared(Status s) {
    return s == Status::Clean || s == Status::Divergent;
}

} // namespace

std::vector<PhaseCell> phaseCells(const DiffResult& diff) {
    std::map<TimePlace, PhaseCell> cells;
    const auto cellOf = [&cells](const TensorId& id) -> PhaseCell& {
        const TimePlace at = timePlaceOf(id);
        auto& c = cells[at];
        c.iteration = at.iteration;
        c.phase = at.phase;
        return c;
    };
    for (std::size_t i = 0; i < diff.tensors.size(); ++i) {
        const auto& t = diff.tensors[i];
        auto& c = cellOf(t.id);
        if (!compared(t.status)) {
            ++c.invalid;
            continue;
        }
        ++c.compared;
        c.divergent += t.status == Status::Divergent ? 1 : 0;
        // NaN counts as the worst (a non-finite error is never round-off).
        const bool worst = !c.target || (!std::isnan(c.worstRatio) &&
                                         (std::isnan(t.ratio) || t.ratio > c.worstRatio));
        if (worst) {
            c.worstRatio = t.ratio;
            c.target = i; // the worst tensor, until a divergence in time is found below
        }
    }
    // A click goes to where the phase first diverges in time (the report's timeline order).
    std::map<TimePlace, bool> placed;
    for (const auto i : diff.timeline) {
        if (i >= diff.tensors.size() || diff.tensors[i].status != Status::Divergent) {
            continue;
        }
        const TimePlace at = timePlaceOf(diff.tensors[i].id);
        if (!placed[at]) {
            placed[at] = true;
            cells[at].target = i;
        }
    }
    if (diff.firstDivergence) {
        const auto it = cells.find({diff.firstDivergence->iteration, diff.firstDivergence->phase});
        if (it != cells.end()) {
            it->second.firstDivergence = true;
            it->second.target = diff.firstDivergence->tensor;
        }
    }
    std::vector<PhaseCell> out;
    for (auto& [at, c] : cells) {
        out.push_back(c);
    }
    return out;
}

QString phaseCellLabel(const PhaseCell& cell) {
    return tr("it %1 · %2").arg(cell.iteration).arg(shortPhase(cell.phase));
}

QString phaseCellToolTip(const PhaseCell& cell, const DiffResult& diff) {
    QString tip = tr("Iteration %1, %2: %3 compared, %4 divergent")
                      .arg(cell.iteration)
                      .arg(shortPhase(cell.phase))
                      .arg(cell.compared)
                      .arg(cell.divergent);
    if (cell.invalid > 0) {
        tip += tr(", %1 not comparable").arg(cell.invalid);
    }
    if (cell.compared > 0) {
        tip += tr("; worst %1 × tolerance").arg(formatRatio(cell.worstRatio));
    }
    if (cell.firstDivergence && diff.firstDivergence) {
        tip += tr("\nThe run's first divergence: %1 %2")
                   .arg(QString::fromStdString(diff.firstDivergence->module),
                        kindTitle(diff.firstDivergence->kind));
    }
    if (cell.target && *cell.target < diff.tensors.size()) {
        const auto& t = diff.tensors[*cell.target];
        tip += tr("\nClick: select %1 %2")
                   .arg(QString::fromStdString(t.id.module), kindTitle(t.id.kind));
    }
    return tip;
}

} // namespace ttrace::ui
