#include "ttrace/ui/models/replay_bars.h"

#include "ttrace/ui/models/tensor_columns.h"

namespace ttrace::ui {
namespace {

bool sameTensor(const TensorId& a, const TensorId& b) {
    return a.module == b.module && a.kind == b.kind && a.index == b.index &&
           a.iteration == b.iteration && a.microBatch == b.microBatch;
}

// Ranks candidates for replayedPeer: the same tensor first, then the same index, then the rest;
// the worst ratio within a rank.
int closeness(const TensorId& replayed, const TensorId& shown) {
    if (sameTensor(replayed, shown)) {
        return 2;
    }
    return replayed.index == shown.index ? 1 : 0;
}

} // namespace

double capturedRatio(const ResultSet& results, const TensorId& replayed) {
    for (const auto i : results.cell(replayed.module, replayed.kind)) {
        if (sameTensor(results.tensor(i).id, replayed)) {
            return results.tensor(i).ratio;
        }
    }
    return std::nan("");
}

std::vector<ReplayBar> replayBars(const ResultSet& results, const replay::ModuleVerdict& verdict,
                                  const std::string& module) {
    std::vector<ReplayBar> bars;
    for (const auto& t : verdict.judgement.tensors) {
        if (t.id.module != module) {
            continue;
        }
        ReplayBar bar;
        bar.label =
            QStringLiteral("%1[%2]").arg(kindTitle(t.id.kind), QString::fromStdString(t.id.index));
        bar.replayed = t.ratio;
        bar.captured = capturedRatio(results, t.id);
        bars.push_back(bar);
    }
    return bars;
}

const replay::TensorJudgement* replayedPeer(const replay::ModuleVerdict& verdict,
                                            const TensorId& shown) {
    const replay::TensorJudgement* best = nullptr;
    for (const auto& t : verdict.judgement.tensors) {
        if (t.id.module != shown.module) {
            continue;
        }
        const bool better =
            !best || closeness(t.id, shown) > closeness(best->id, shown) ||
            (closeness(t.id, shown) == closeness(best->id, shown) && t.ratio > best->ratio);
        if (better) {
            best = &t;
        }
    }
    return best;
}

} // namespace ttrace::ui
