#include "ttrace/ui/models/markdown_report.h"

#include "ttrace/report/report_markdown.h"

#include "ttrace/ui/models/number_format.h"
#include "ttrace/ui/models/stats_table_model.h"
#include "ttrace/ui/models/tensor_columns.h"

namespace ttrace::ui {
namespace {

QString qstr(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// Keeps table cells on one line and stops '|' from splitting them.
QString cell(QString text) {
    return text.replace('|', QStringLiteral("\\|")).replace('\n', ' ');
}

QString stepText(const StepFilter& f) {
    const QString it = f.iteration ? QString::number(*f.iteration) : QStringLiteral("all");
    const QString mb = f.microBatch ? QString::number(*f.microBatch) : QStringLiteral("all");
    return QStringLiteral("iteration %1, micro-batch %2").arg(it, mb);
}

// Demotes every heading one level, so the engine's report nests under ours.
QString demoteHeadings(const QString& markdown) {
    QStringList lines = markdown.split('\n');
    for (auto& line : lines) {
        if (line.startsWith('#')) {
            line.prepend('#');
        }
    }
    return lines.join('\n');
}

void appendDivergentTable(QString& md, const LayerTreeModel& model, const QStringList& divergent,
                          int maxModules) {
    const ResultSet& results = model.results();
    md += QStringLiteral("| # | Module | Type | Origin | Worst tensor | Ratio | Error | "
                         "Tolerance |\n|---:|---|---|---|---|---:|---:|---:|\n");
    int row = 0;
    for (const auto& name : divergent) {
        if (++row > maxModules) {
            md += QStringLiteral("\n… and %1 more.\n").arg(divergent.size() - maxModules);
            break;
        }
        const auto column = model.divergentColumn(name);
        const auto tensor = model.tensorAt(model.indexOfModule(name, column));
        const ModuleResult* m = results.module(name.toStdString());
        QString kind, ratio, error, tolerance;
        if (tensor) {
            const auto& t = results.tensor(*tensor);
            kind = QStringLiteral("%1[%2] iter %3 mb %4")
                       .arg(kindTitle(t.id.kind), qstr(t.id.index))
                       .arg(t.id.iteration)
                       .arg(t.id.microBatch < 0 ? QStringLiteral("all")
                                                : QString::number(t.id.microBatch));
            ratio = formatRatio(t.ratio);
            error = formatScientific(t.metrics.relError);
            tolerance = formatScientific(t.tolerance.value);
        }
        md += QStringLiteral("| %1 | `%2` | %3 | %4 | %5 | %6 | %7 | %8 |\n")
                  .arg(row)
                  .arg(cell(name), m ? cell(qstr(m->type)) : QString(),
                       m ? qstr(originName(m->origin)) : QString(), cell(kind), ratio, error,
                       tolerance);
    }
    md += '\n';
}

// The run's header: the engine's report when the comparison finished, else what is known.
QString markdownHead(const MarkdownSnapshot& snapshot) {
    QString md = QStringLiteral("# TTrace Explorer report\n\n");
    if (snapshot.result) {
        // The engine's report covers the whole run (the same text the CLI prints).
        md += demoteHeadings(QString::fromStdString(diffResultToMarkdown(*snapshot.result)))
                  .trimmed();
        md += QStringLiteral("\n\n");
        return md;
    }
    md += QStringLiteral("| | |\n|---|---|\n");
    md += QStringLiteral("| Reference | `%1` |\n").arg(cell(snapshot.reference));
    md += QStringLiteral("| Candidate | `%1` |\n").arg(cell(snapshot.candidate));
    md += QStringLiteral("| Tensors | %1 compared (comparison not finished) |\n\n")
              .arg(snapshot.compared);
    return md;
}

QString firstDivergenceText(const LayerTreeModel& model) {
    const QString first = model.firstDivergentModule();
    if (first.isEmpty()) {
        return {};
    }
    QString md = QStringLiteral("The run first diverges at `%1`").arg(first);
    if (const ModuleResult* m = model.results().module(first.toStdString());
        m && m->origin != Origin::None) {
        md += QStringLiteral(" (%1)").arg(qstr(originName(m->origin)));
    }
    return md + QStringLiteral(".\n\n");
}

QString selectedTensorText(const ResultSet& results, const ReportView& view) {
    if (!view.selectedTensor || *view.selectedTensor >= results.size()) {
        return {};
    }
    QString md = QStringLiteral("### Selected tensor\n\n| Property | Value |\n|---|---|\n");
    for (const auto& [property, value] : tensorStatsRows(results.tensor(*view.selectedTensor))) {
        md += QStringLiteral("| %1 | %2 |\n").arg(cell(property), cell(value));
    }
    return md + '\n';
}

QString problemsText(const QStringList& problems) {
    if (problems.isEmpty()) {
        return {};
    }
    QString md = QStringLiteral("### Problems shown in the window\n\n");
    for (const auto& p : problems) {
        md += QStringLiteral("- %1\n").arg(p);
    }
    return md + '\n';
}

// "## Current view" to the end: what the window shows under its step filter and selection.
QString viewSections(const LayerTreeModel& model, const ReportView& view) {
    const ResultSet& results = model.results();
    const StepFilter& filter = model.stepFilter();
    QString md = QStringLiteral("## Current view: %1\n\n").arg(stepText(filter));
    md += firstDivergenceText(model);
    const QStringList divergent = model.divergentModules();
    // The engine's table already covers every step; a narrowed view gets its own.
    const bool narrowed = filter.iteration || filter.microBatch || !results.isFinal();
    if (narrowed && !divergent.isEmpty()) {
        md += QStringLiteral("### Divergent modules in this view\n\n");
        appendDivergentTable(md, model, divergent, view.maxModules);
    } else if (divergent.isEmpty() && results.size() > 0) {
        md += QStringLiteral("Every tensor in this view is within its round-off tolerance.\n\n");
    }
    md += selectedTensorText(results, view);
    md += problemsText(view.problems);
    md += QStringLiteral("_Generated by TTrace Explorer._\n");
    return md;
}

} // namespace

MarkdownSnapshot markdownSnapshot(const LayerTreeModel& model, const ReportView& view) {
    MarkdownSnapshot snapshot;
    snapshot.result = model.results().finalShared();
    snapshot.reference = view.reference;
    snapshot.candidate = view.candidate;
    snapshot.compared = model.results().size();
    snapshot.viewSections = viewSections(model, view);
    return snapshot;
}

QString renderMarkdown(const MarkdownSnapshot& snapshot) {
    return markdownHead(snapshot) + snapshot.viewSections;
}

QString markdownReport(const LayerTreeModel& model, const ReportView& view) {
    return renderMarkdown(markdownSnapshot(model, view));
}

} // namespace ttrace::ui
