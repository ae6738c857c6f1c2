#pragma once
// The headline of a comparison: where the run first diverges in time (iteration, phase of the
// training step, module, tensor kind, ranks whose pieces carry the error), what else diverges
// in that same phase, and the tensor to select first. A screenshot of the window tells the
// story from this one line.
//
// `storyHeadline` reads the core's timeline (`DiffResult::firstDivergence`, the same that leads
// `ttrace diff`'s text, JSON and Markdown), so the explorer and the CLI agree.
#include "ttrace/compare/diff_result.h"

#include <QList>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

namespace ttrace::ui {

struct StoryHeadline {
    bool divergent = false;
    std::int64_t iteration = 0;
    std::int64_t microBatch = -1; // -1: once per iteration (main grads, optimizer step)
    QString phase;                // "forward", "backward", "gradient reduction", "optimizer step"
    QString module;               // canonical name of the first module in causal order
    TensorKind kind = TensorKind::ForwardOutput;
    std::optional<std::size_t> tensor; // index into DiffResult::tensors
    QList<int> ranks;                  // candidate ranks whose pieces exceed the tolerance
    bool replicasDisagree = false;     // the tensor's replicas differ between ranks
    QStringList alsoInPhase;           // other modules diverging in the same phase, causal order
    // Without a divergence: the core's drift clause (verdict_text.h driftText), "" when none
    // drifts (docs/cross-version.md).
    QString drift;
};

StoryHeadline storyHeadline(const DiffResult& diff);

// One line: "First divergence: iteration 0 · gradient reduction · layers.0.input_layernorm
// main grad · ranks 1, 3 (replicas disagree) · also in this phase: 4 more (…)".
QString headlineText(const StoryHeadline& headline);

} // namespace ttrace::ui
