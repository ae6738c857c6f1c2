#include "ttrace/compare/bug_class.h"

#include <algorithm>
#include <cmath>

namespace ttrace {
namespace {

int sizeOf(const ParallelSizes& p, const char* name) {
    const auto it = p.find(name);
    return it == p.end() ? 1 : it->second;
}

const ShapeSignature* find(const std::vector<ShapeSignature>& sigs, SignatureKind kind) {
    const auto it = std::find_if(sigs.begin(), sigs.end(),
                                 [kind](const ShapeSignature& s) { return s.kind == kind; });
    return it == sigs.end() ? nullptr : &*it;
}

bool contains(const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
}

bool isStateOrGrad(TensorKind k) {
    return k == TensorKind::ParamGrad || k == TensorKind::MainGrad ||
           k == TensorKind::ParamAfterStep || k == TensorKind::OptimizerState;
}

std::optional<BugClassHint> fromFactor(const HintContext& c, double factor) {
    const auto near = [factor](double k) { return k > 1 && std::abs(factor * k - 1.0) < 0.01; };
    const auto nearMul = [factor](double k) { return k > 1 && std::abs(factor / k - 1.0) < 0.01; };
    const int dp = sizeOf(c.parallel, "dp");
    const int mb = sizeOf(c.parallel, "micro_batches");
    if (isStateOrGrad(c.id.kind) && near(dp)) {
        return BugClassHint{"dp-grad-sum-not-mean",
                            "x1/dp on gradients: gradients averaged twice, or mean instead of sum "
                            "in the data-parallel reduction"};
    }
    // Clipping by a rank's own shard norm: with similar shards each local norm is about
    // 1/sqrt(tp) of the global one, so every gradient comes out sqrt(tp) times too large.
    const double rootTp = std::sqrt(static_cast<double>(sizeOf(c.parallel, "tp")));
    if (isStateOrGrad(c.id.kind) && phaseOf(c.id.kind) != Phase::Backward &&
        (nearMul(rootTp) || near(rootTp))) {
        return BugClassHint{"grad-clip-no-mp-reduce",
                            "gradients scaled by sqrt(tp) after the backward: a norm taken over "
                            "one rank's slice (grad clipping without the model-parallel "
                            "all-reduce)"};
    }
    if (isBackwardKind(c.id.kind) && (nearMul(mb) || near(mb))) {
        return BugClassHint{"grad-accum-scale",
                            "gradients scaled by the number of micro-batches: the loss is not "
                            "divided (or divided twice) by it"};
    }
    return std::nullopt;
}

std::optional<BugClassHint> fromReplicas(const HintContext& c) {
    const auto& m = c.id.module;
    if (contains(m, "router")) {
        return BugClassHint{"moe-router-not-synced",
                            "TP replicas of the router weight drifted apart: its gradient, taken "
                            "over a sequence slice, is not all-reduced over TP"};
    }
    if (contains(m, "embedding") && sizeOf(c.parallel, "pp") > 1) {
        return BugClassHint{"tied-embedding-not-synced",
                            "the first and last pipeline stage's copies of the tied embedding "
                            "disagree: the embedding-group gradient all-reduce is missing"};
    }
    // An expert's copies live on its expert data-parallel group, which may hold the TP ranks
    // (expert TP 1 under TP2): the missing reduction is the expert-DP one, not a norm's.
    if (contains(m, "local_experts")) {
        return BugClassHint{"expert-grad-not-reduced",
                            "expert data-parallel replicas of an expert weight disagree: its "
                            "gradient (a partial sum over the tokens routed to it on each rank) "
                            "is not all-reduced over expert data parallelism"};
    }
    if (contains(m, "norm") || sizeOf(c.parallel, "tp") > 1) {
        return BugClassHint{"sp-norm-grad-not-reduced",
                            "TP replicas of a sequence-parallel weight disagree: its gradient "
                            "(a partial sum over the local sequence slice) is not all-reduced "
                            "over TP"};
    }
    return BugClassHint{"", "replicated values drifted apart: a gradient all-reduce over the "
                            "group that holds the copies is missing"};
}

std::optional<BugClassHint> fromSignatures(const HintContext& c) {
    const auto& s = c.signatures;
    // TP ranks computing different losses: each normalized over its own vocabulary slice.
    if (contains(c.id.module, "loss") && phaseOf(c.id.kind) == Phase::Forward &&
        sizeOf(c.parallel, "tp") > 1 && !s.empty()) {
        return BugClassHint{"vocab-ce-missing-allreduce",
                            "the loss differs across TP ranks: vocab-parallel cross entropy "
                            "normalized over one vocabulary slice (an all-reduce is missing)"};
    }
    if (const auto* f = find(s, SignatureKind::ConstantFactor)) {
        if (auto h = fromFactor(c, f->factor)) {
            return h;
        }
    }
    if (find(s, SignatureKind::SliceFactors) && isStateOrGrad(c.id.kind)) {
        return BugClassHint{"grad-clip-no-mp-reduce",
                            "each rank's slice scaled by its own factor: a norm over one slice "
                            "only (grad clipping without the model-parallel all-reduce)"};
    }
    if (find(s, SignatureKind::ReplicasDisagree)) {
        return fromReplicas(c);
    }
    const bool embeddingForward =
        contains(c.id.module, "embedding") && phaseOf(c.id.kind) == Phase::Forward;
    if ((find(s, SignatureKind::ZeroedRows) && contains(c.id.module, "embedding")) ||
        (find(s, SignatureKind::SliceLocal) && embeddingForward)) {
        return BugClassHint{"vocab-embedding-off-by-one",
                            "embedding rows zeroed: a vocab-parallel embedding masks ids at a "
                            "vocabulary range boundary"};
    }
    if (find(s, SignatureKind::RowPermutation) && sizeOf(c.parallel, "ep") > 1) {
        return BugClassHint{"ep-dispatch-mismatch",
                            "tokens mixed up: the expert-parallel un-permute uses other indices "
                            "than the dispatch"};
    }
    if (c.id.kind == TensorKind::ParamAfterStep && c.shardedOptimizer &&
        (find(s, SignatureKind::SlicePermutation) || find(s, SignatureKind::RowPermutation))) {
        return BugClassHint{"dist-opt-wrong-offset",
                            "parameter pieces swapped: gathered from wrong offsets of the "
                            "optimizer's flat buffer"};
    }
    return std::nullopt;
}

// Where signatures say nothing specific, the place and the layout still narrow it down.
BugClassHint fromContext(const HintContext& c) {
    const Phase phase = phaseOf(c.id.kind);
    const auto& m = c.id.module;
    if (c.precision == "fp8" && phase == Phase::Forward) {
        return {"fp8-amax-not-reduced",
                "FP8 forward divergence: a sharded tensor's scaling factor from a local amax "
                "instead of the amax reduced over TP"};
    }
    if (sizeOf(c.parallel, "ep") > 1 && phase == Phase::Forward) {
        return {"ep-dispatch-mismatch",
                "the forward diverges first at an expert-parallel layer: tokens returned with "
                "other indices than they were dispatched with"};
    }
    if (sizeOf(c.parallel, "cp") > 1 && phase == Phase::Forward && contains(m, "attention")) {
        return {"rope-cp-offset", "attention diverges under context parallelism: positions "
                                  "(rotary offsets) do not follow the chunks a rank holds"};
    }
    if (sizeOf(c.parallel, "cp") > 1 && phase == Phase::Backward) {
        return {"cp-attn-backward", "gradients diverge under context parallelism: dK/dV not "
                                    "sent back to the ranks that own the keys"};
    }
    if (contains(m, "loss") && phase == Phase::Forward && sizeOf(c.parallel, "tp") > 1) {
        return {"vocab-ce-missing-allreduce",
                "the loss diverges under TP: vocab-parallel cross entropy normalized over one "
                "vocabulary slice (an all-reduce is missing)"};
    }
    if (phase == Phase::OptimizerStep && c.shardedOptimizer) {
        return {"dist-opt-wrong-offset", "only the optimizer step diverges: the update or the "
                                         "parameter gather after it (e.g. wrong offsets in a "
                                         "distributed optimizer's buffer)"};
    }
    if (phase == Phase::OptimizerStep) {
        // No sharded optimizer state: no buffer offsets to get wrong.
        return {"", "only the optimizer step diverges: the update itself (learning rate, the "
                    "gradient clipping coefficient and the norm it is taken from, the "
                    "optimizer's state)"};
    }
    if (phase == Phase::GradReduction) {
        return {"", "gradients diverge only after their reduction: a missing, extra or "
                    "mis-scaled collective in the gradient reduction"};
    }
    return {};
}

} // namespace

BugClassHint bugClassHint(const HintContext& context) {
    if (auto h = fromSignatures(context)) {
        return *h;
    }
    return fromContext(context);
}

} // namespace ttrace
