#include "ttrace/ui/models/replay_bars.h"

#include "ttrace/ui/models/tensor_columns.h"

namespace ttrace::ui {

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
        for (const auto i : results.cell(t.id.module, t.id.kind)) {
            const auto& c = results.tensor(i).id;
            if (c.iteration == t.id.iteration && c.microBatch == t.id.microBatch &&
                c.index == t.id.index) {
                bar.captured = results.tensor(i).ratio;
                break;
            }
        }
        bars.push_back(bar);
    }
    return bars;
}

} // namespace ttrace::ui
