#include "ttrace/ui/models/story_headline.h"

#include "ttrace/report/verdict_text.h"
#include "ttrace/ui/models/tensor_columns.h"

#include <QCoreApplication>

#include <algorithm>

namespace ttrace::ui {
namespace {

QString qstr(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

bool replicasDisagree(const TensorResult& t) {
    return std::any_of(t.findings.begin(), t.findings.end(),
                       [](const auto& f) { return f.code == DiagnosticCode::ReplicaDisagree; });
}

} // namespace

StoryHeadline storyHeadline(const DiffResult& diff) {
    // The core's timeline decides what comes first, so `ttrace diff` and the explorer agree.
    StoryHeadline h;
    if (!diff.firstDivergence || diff.firstDivergence->tensor >= diff.tensors.size()) {
        h.drift = qstr(driftText(diff.summary));
        return h;
    }
    const auto& first = *diff.firstDivergence;
    h.divergent = true;
    h.iteration = first.iteration;
    h.microBatch = first.microBatch;
    h.phase = qstr(phaseLabel(first.phase));
    h.module = qstr(first.module);
    h.kind = first.kind;
    h.tensor = first.tensor;
    for (const int r : first.ranks) {
        h.ranks << r;
    }
    h.replicasDisagree = replicasDisagree(diff.tensors[first.tensor]);
    for (const auto& name : first.alsoInPhase) {
        h.alsoInPhase << qstr(name);
    }
    return h;
}

QString headlineText(const StoryHeadline& h) {
    const auto tr = [](const char* text) {
        return QCoreApplication::translate("StoryHeadline", text);
    };
    if (!h.divergent && !h.drift.isEmpty()) {
        return tr("No divergence beyond drift: %1.").arg(h.drift);
    }
    if (!h.divergent) {
        return tr("No divergence: every compared tensor is within its round-off tolerance.");
    }
    QStringList parts;
    parts << tr("First divergence: iteration %1").arg(h.iteration) << h.phase
          << QStringLiteral("%1 %2").arg(h.module, kindTitle(h.kind));
    if (!h.ranks.isEmpty()) {
        QStringList ranks;
        for (const int r : h.ranks) {
            ranks << QString::number(r);
        }
        parts << (h.ranks.size() == 1 ? tr("rank %1") : tr("ranks %1")).arg(ranks.join(", ")) +
                     (h.replicasDisagree ? tr(" (replicas disagree)") : QString());
    }
    if (!h.alsoInPhase.isEmpty()) {
        constexpr qsizetype kNamed = 4;
        QString also = h.alsoInPhase.mid(0, kNamed).join(QStringLiteral(", "));
        if (h.alsoInPhase.size() > kNamed) {
            also += tr(", +%1 more").arg(h.alsoInPhase.size() - kNamed);
        }
        parts << tr("also in this phase: %1").arg(also);
    }
    return parts.join(QStringLiteral("  ·  "));
}

} // namespace ttrace::ui
