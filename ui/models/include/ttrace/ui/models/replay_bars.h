#pragma once
// Pairs each tensor a replay returned with the same tensor as captured, for the drill-down's
// captured-vs-replayed plot.
#include "ttrace/replay/localize_result.h"
#include "ttrace/ui/models/result_set.h"

#include <QString>

#include <cmath>
#include <string>
#include <vector>

namespace ttrace::ui {

struct ReplayBar {
    QString label;                  // "output[0]", "param grad[weight]"
    double captured = std::nan(""); // ratio in the diff (NaN when the diff has no such tensor)
    double replayed = 0.0;          // ratio of the replay against its measured replay tolerance
};

// The verdict's tensors of `module` (all of them for a module's own replay; its parameters'
// for a step replay over every parameter).
std::vector<ReplayBar> replayBars(const ResultSet& results, const replay::ModuleVerdict& verdict,
                                  const std::string& module);

// The replayed tensor whose histogram goes beside the captured `shown` one: the same tensor
// when the replay returned it; else the module's replayed tensor of the same index with the
// worst ratio (a step replay returns param_after_step[weight] for a main_grad[weight]); else
// the module's worst. nullptr when the replay returned nothing of this module.
const replay::TensorJudgement* replayedPeer(const replay::ModuleVerdict& verdict,
                                            const TensorId& shown);

// The captured ratio of a replayed tensor in the diff (NaN when the diff has no such tensor).
double capturedRatio(const ResultSet& results, const TensorId& replayed);

} // namespace ttrace::ui
