#pragma once
// From a divergent tensor's error shape (and where it sits: kind, phase, module, parallel
// layout) to the bug class of docs/bug-zoo.md that most often produces it. A hint, not proof:
// localization confirms it.
#include "ttrace/compare/shape_diagnosis.h"
#include "ttrace/io/tensor_id.h"

#include <string>
#include <vector>

namespace ttrace {

struct BugClassHint {
    std::string bugClass; // a docs/bug-zoo.md name, e.g. "dp-grad-sum-not-mean"; empty: none
    std::string text;     // one sentence naming the mechanism
};

struct HintContext {
    const TensorId& id;
    const std::vector<ShapeSignature>& signatures;
    const ParallelSizes& parallel; // candidate layout, plus "micro_batches"
    const std::string& precision;  // reference precision recipe
    // The candidate shards its optimizer's state over data parallelism (a distributed
    // optimizer's flat ranges, FSDP): only then can a step gather from wrong offsets.
    bool shardedOptimizer = false;
};

BugClassHint bugClassHint(const HintContext& context);

} // namespace ttrace
