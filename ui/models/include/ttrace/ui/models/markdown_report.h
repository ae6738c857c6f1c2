#pragma once
// A Markdown report of what the explorer shows: the verdict, where the run first diverges, the
// divergent modules under the current step filter, the selected tensor and any problems found
// while loading. Meant to be pasted into a bug report next to a screenshot.
#include "ttrace/ui/models/layer_tree_model.h"

#include <QString>
#include <QStringList>

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

} // namespace ttrace::ui
