#pragma once
// A Markdown report of what the explorer shows: the verdict, where the run first diverges, the
// divergent modules under the current step filter, the selected tensor and any problems found
// while loading. Meant to be pasted into a bug report next to a screenshot.
#include "ttrace/ui/models/layer_tree_model.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

namespace ttrace::ui {

struct ReportView {
    QString reference;
    QString candidate;
    std::optional<std::size_t> selectedTensor; // index into the model's ResultSet
    QStringList problems;                      // diagnostics shown in the window
    int maxModules = 50;                       // rows of the divergent-module table
};

QString markdownReport(const LayerTreeModel& model, const ReportView& view);

// The report in two parts, so the costly one can be made off the GUI thread: what only the
// window knows (the current view's sections) is taken on the GUI thread; the engine's report of
// the whole run is rendered later from the shared result.
struct MarkdownSnapshot {
    std::shared_ptr<const DiffResult> result; // the final result; null while comparing
    QString reference;
    QString candidate;
    std::size_t compared = 0; // tensors compared so far, while comparing
    QString viewSections;     // "## Current view" to the end
};

MarkdownSnapshot markdownSnapshot(const LayerTreeModel& model, const ReportView& view);
// Safe on any thread: reads only the snapshot.
QString renderMarkdown(const MarkdownSnapshot& snapshot);

} // namespace ttrace::ui
