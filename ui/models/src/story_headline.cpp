#include "ttrace/ui/models/story_headline.h"

#include "ttrace/replay/localize_walk.h"
#include "ttrace/ui/models/tensor_columns.h"

#include <QCoreApplication>

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

namespace ttrace::ui {
namespace {

using replay::LocalizePhase;

QString qstr(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

bool consumed(TensorKind kind) {
    // A phase's inputs diverge only because something upstream produced them wrong.
    return kind == TensorKind::ForwardInput || kind == TensorKind::OutputGrad;
}

// Position of a module in the phase's causal order: gradients flow from the loss backwards.
long long causalRank(const std::map<std::string, int>& order, const std::string& module,
                     LocalizePhase phase) {
    const auto it = order.find(module);
    const long long o = it == order.end() ? std::numeric_limits<int>::max() : it->second;
    return phase == LocalizePhase::Backward ? -o : o;
}

bool isAncestor(const std::string& ancestor, const std::string& module) {
    return module.size() > ancestor.size() + 1 && module.starts_with(ancestor) &&
           module[ancestor.size()] == '.';
}

// Within the first micro-batch that diverges: the first module in causal order, then, since a
// parent's forward starts before its children's, down into its first divergent descendant
// until a module without one (the verdicts' timeline does the same).
std::string firstModule(const std::vector<const TensorResult*>& tensors,
                        const std::map<std::string, int>& order, LocalizePhase phase) {
    std::string best;
    long long bestRank = 0;
    for (const auto* t : tensors) {
        const long long rank = causalRank(order, t->id.module, phase);
        if (best.empty() || rank < bestRank) {
            best = t->id.module;
            bestRank = rank;
        }
    }
    for (bool deeper = true; deeper;) {
        deeper = false;
        std::string child;
        long long childRank = 0;
        for (const auto* t : tensors) {
            const long long rank = causalRank(order, t->id.module, LocalizePhase::Forward);
            if (isAncestor(best, t->id.module) && (child.empty() || rank < childRank)) {
                child = t->id.module;
                childRank = rank;
            }
        }
        if (!child.empty()) {
            best = child;
            deeper = true;
        }
    }
    return best;
}

void fillRanks(const TensorResult& t, StoryHeadline& h) {
    for (const auto& s : t.metrics.shards) {
        if (t.tolerance.value > 0.0 ? s.relError > t.tolerance.value : s.relError > 0.0) {
            h.ranks << s.rank;
        }
    }
    for (const auto& f : t.findings) {
        h.replicasDisagree = h.replicasDisagree || f.code == "replica-disagree";
    }
}

} // namespace

StoryHeadline storyHeadline(const DiffResult& diff) {
    StoryHeadline h;
    const auto start = replay::firstDivergence(diff);
    if (!start) {
        return h;
    }
    std::map<std::string, int> order;
    for (const auto& m : diff.modules) {
        order[m.name] = m.order;
    }
    std::vector<const TensorResult*> phase; // divergent outputs of the first phase in time
    for (const auto& t : diff.tensors) {
        if (t.status == Status::Divergent && !consumed(t.id.kind) &&
            replay::phaseOf(t.id) == *start) {
            phase.push_back(&t);
        }
    }
    if (phase.empty()) {
        return h;
    }
    std::int64_t microBatch = phase.front()->id.microBatch;
    for (const auto* t : phase) {
        microBatch = std::min(microBatch, t->id.microBatch);
    }
    std::vector<const TensorResult*> first;
    for (const auto* t : phase) {
        if (t->id.microBatch == microBatch) {
            first.push_back(t);
        }
    }
    const std::string module = firstModule(first, order, start->phase);
    const TensorResult* worst = nullptr;
    for (const auto* t : first) {
        if (t->id.module == module && (!worst || t->ratio > worst->ratio)) {
            worst = t;
        }
    }
    h.divergent = true;
    h.iteration = start->iteration;
    h.microBatch = microBatch;
    h.phase = qstr(replay::localizePhaseName(start->phase));
    h.module = qstr(module);
    h.kind = worst->id.kind;
    h.tensor = static_cast<std::size_t>(worst - diff.tensors.data());
    fillRanks(*worst, h);
    std::map<long long, std::string> others; // causal rank -> module
    for (const auto* t : phase) {
        if (t->id.module != module && !isAncestor(t->id.module, module)) {
            others.emplace(causalRank(order, t->id.module, start->phase), t->id.module);
        }
    }
    for (const auto& [rank, name] : others) {
        h.alsoInPhase << qstr(name);
    }
    return h;
}

QString headlineText(const StoryHeadline& h) {
    const auto tr = [](const char* text) {
        return QCoreApplication::translate("StoryHeadline", text);
    };
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
