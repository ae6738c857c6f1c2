#include "ttrace/compare/diff_engine.h"
#include "ttrace/compare/diff_parts.h"

#include "compare/carried_state.h"
#include "compare/clip_coefficient.h"
#include "compare/convention_check.h"
#include "compare/diff_pair_steps.h"
#include "compare/optimizer_conditioning.h"
#include "compare/pair_checks.h"
#include "compare/reference_view.h"
#include "compare/tensor_comparison.h"
#include "ttrace/compare/cache_fingerprint.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/compare/drift.h"
#include "ttrace/compare/run_layout.h"
#include "ttrace/compare/verdict.h"
#include "ttrace/io/capture_status.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace ttrace {
namespace {

// Tensors compared at once. Each holds two merged tensors (with their decoded shards) and one
// perturbed variant, so memory stays at a few full tensors; the work inside each comparison
// (decode, merge, metrics) is itself parallel, so a small number keeps every core busy.
constexpr std::size_t kTensorsInFlight = 4;

bool selected(const TensorId& id, const DiffOptions& options) {
    return id.variant == "nominal" && (!options.iteration || id.iteration == *options.iteration) &&
           (!options.microBatch || id.microBatch == *options.microBatch) &&
           (!options.onlyIterations || options.onlyIterations->contains(id.iteration));
}

std::vector<TensorId> tensorsToCompare(const Bundle& reference, const Bundle& candidate,
                                       const DiffOptions& options) {
    std::set<TensorId> ids;
    for (const auto* bundle : {&reference, &candidate}) {
        for (const auto& [id, shards] : bundle->tensors()) {
            if (selected(id, options)) {
                ids.insert(id);
            }
        }
    }
    return {ids.begin(), ids.end()};
}

// Compares ids[begin, end) with at most kTensorsInFlight tensors alive at once.
void compareRange(const ComparisonContext& ctx, const std::vector<TensorId>& ids, std::size_t begin,
                  std::size_t end, std::vector<TensorResult>& out, ProgressTracker& tracker,
                  const TensorResultFn& onTensor) {
    std::size_t next = begin;
    tbb::parallel_pipeline(
        kTensorsInFlight,
        tbb::make_filter<void, std::size_t>(tbb::filter_mode::serial_in_order,
                                            [&](tbb::flow_control& fc) -> std::size_t {
                                                if (next == end || tracker.cancelled()) {
                                                    fc.stop();
                                                    return 0;
                                                }
                                                return next++;
                                            }) &
            tbb::make_filter<std::size_t, std::size_t>(tbb::filter_mode::parallel,
                                                       [&](std::size_t i) {
                                                           out[i] = compareTensor(ctx, ids[i]);
                                                           return i;
                                                       }) &
            // Serial: front ends' callbacks need not be thread-safe.
            tbb::make_filter<std::size_t, void>(tbb::filter_mode::serial_out_of_order,
                                                [&](std::size_t i) {
                                                    if (onTensor) {
                                                        onTensor(out[i]);
                                                    }
                                                    tracker.advance(ids[i].module);
                                                }));
}

using StateKey = std::tuple<std::string, TensorKind, std::string>;

// The states the tensors of `subset` inherit from earlier iterations.
std::set<StateKey> inheritedStates(const std::vector<TensorId>& ids,
                                   const std::vector<std::size_t>& subset) {
    std::set<StateKey> keys;
    for (const auto i : subset) {
        if (const auto state = carriedStateKind(ids[i].kind)) {
            keys.insert({ids[i].module, *state, ids[i].index});
        }
    }
    return keys;
}

// A diff of iteration N alone still needs the floors the training state carried into it, so
// the reference's state tensors of the earlier iterations are measured (floors only).
// Only the states of `keys` are measured (a process comparing a share needs no others).
void carryStateFloorsUpTo(ComparisonContext& ctx, std::int64_t iteration,
                          const std::optional<std::set<StateKey>>& keys) {
    std::map<std::int64_t, std::vector<TensorId>> earlier;
    for (const auto& [id, shards] : ctx.reference.tensors()) {
        if (id.variant == "nominal" && id.iteration < iteration &&
            (id.kind == TensorKind::ParamAfterStep || id.kind == TensorKind::OptimizerState) &&
            (!keys || keys->contains(StateKey{id.module, id.kind, id.index}))) {
            earlier[id.iteration].push_back(id);
        }
    }
    for (const auto& entry : earlier) {
        // A named reference, not a structured binding: clang before 16 cannot capture those.
        const auto& stateIds = entry.second;
        std::vector<std::optional<NoiseFloor>> floors(stateIds.size());
        std::vector<AdamTensorTerms> terms(stateIds.size());
        tbb::parallel_for(std::size_t{0}, stateIds.size(), [&](std::size_t i) {
            floors[i] = stateFloor(ctx, stateIds[i]);
            terms[i] = stateConditioning(ctx, stateIds[i]);
        });
        StateTerms next;
        for (std::size_t i = 0; i < stateIds.size(); ++i) {
            if (floors[i]) {
                recordStateFloor(stateIds[i], *floors[i], ctx.carried);
            }
            recordStateTerms(stateIds[i], std::move(terms[i].terms), next);
        }
        ctx.carriedTerms = std::move(next);
    }
}

// The terms this iteration's state tensors leave to the next one (replacing the previous).
void carryStateTerms(const std::vector<TensorId>& ids, std::size_t begin, std::size_t end,
                     std::vector<TensorResult>& results, StateTerms& carried) {
    StateTerms next;
    for (std::size_t i = begin; i < end; ++i) {
        recordStateTerms(ids[i], std::move(results[i].conditioning.terms), next);
    }
    carried = std::move(next);
}

ComparisonContext contextFor(const Bundle& reference, const Bundle& candidate,
                             const DiffOptions& options) {
    ComparisonContext ctx{reference, candidate, options.tolerance, {}, 0, {}, {}, {}, false, {}};
    for (const auto& v : reference.manifest().variants) {
        if (v != "nominal") {
            ctx.perturbedVariants.push_back(v);
        }
    }
    for (const auto& m : reference.manifest().modules) {
        ctx.maxDepth = std::max(ctx.maxDepth, m.depth);
    }
    ctx.bothSides = moduleCallsOnBothSides(reference, candidate);
    ctx.shardedOptimizer = shardsOptimizerState(candidate);
    ctx.reductions =
        std::make_shared<const ReductionPaths>(ReductionPaths::build(reference, candidate));
    return ctx;
}

} // namespace

std::vector<TensorId> diffTensorIds(const Bundle& reference, const Bundle& candidate,
                                    const DiffOptions& options) {
    return tensorsToCompare(reference, candidate, options);
}

SubsetComparison compareTensorSubset(const Bundle& reference, const Bundle& candidate,
                                     const DiffOptions& options, const std::vector<TensorId>& ids,
                                     const std::vector<std::size_t>& subset,
                                     const ProgressFn& progress, const TensorResultFn& onTensor) {
    auto ctx = contextFor(reference, candidate, options);
    SubsetComparison out;
    out.indices = subset;
    out.tensors.resize(subset.size());
    // The share's own list, so the engine's loop below runs unchanged on it.
    std::vector<TensorId> mine;
    mine.reserve(subset.size());
    for (const auto i : subset) {
        mine.push_back(ids[i]);
    }
    ProgressTracker tracker(progress, mine.size());
    if (!ids.empty()) {
        // The whole diff's first iteration, not the share's: a share without tensors there
        // still inherits exactly what the whole diff would carry.
        std::optional<std::set<StateKey>> keys;
        if (subset.size() != ids.size()) {
            keys = inheritedStates(ids, subset);
        }
        carryStateFloorsUpTo(ctx, ids.front().iteration, keys);
    }
    // Iterations in order (ids sort by iteration first): each one's state tensors inherit the
    // previous one's effective floors. Every iteration of the whole diff is stepped through,
    // even one without tensors of this share: it replaces the carried terms as it does there.
    std::size_t begin = 0;
    for (std::size_t first = 0; first < ids.size() && !tracker.cancelled();) {
        const auto iteration = ids[first].iteration;
        while (first < ids.size() && ids[first].iteration == iteration) {
            ++first;
        }
        std::size_t end = begin;
        while (end < mine.size() && mine[end].iteration == iteration) {
            ++end;
        }
        compareRange(ctx, mine, begin, end, out.tensors, tracker, onTensor);
        for (std::size_t i = begin; i < end; ++i) {
            const auto& tol = out.tensors[i].tolerance;
            if (tol.perturbedSamples > 0) {
                recordStateFloor(mine[i], {tol.floorMean, tol.floorSpread, tol.perturbedSamples},
                                 ctx.carried);
            }
        }
        carryStateTerms(mine, begin, end, out.tensors, ctx.carriedTerms);
        begin = end;
    }
    out.cancelled = tracker.cancelled();
    return out;
}

DiffResult finishDiff(const Bundle& reference, const Bundle& candidate, const DiffOptions& options,
                      std::vector<TensorResult> tensors, bool cancelled,
                      const std::string& cacheKey, const Diagnostics& notes) {
    DiffResult result;
    result.diagnostics = notes;
    auto& s = result.summary;
    s.referenceDir = reference.dir().string();
    s.candidateDir = candidate.dir().string();
    s.precision = reference.manifest().precision;
    s.referenceRanks = reference.manifest().worldSize;
    s.candidateRanks = candidate.manifest().worldSize;
    s.referenceLayout = layoutText(reference.manifest());
    s.candidateLayout = layoutText(candidate.manifest());
    s.referenceRole = reference.manifest().role;
    const auto& variants = reference.manifest().variants;
    s.perturbedVariants = static_cast<std::size_t>(std::count_if(
        variants.begin(), variants.end(), [](const auto& v) { return v != "nominal"; }));
    result.tensors = std::move(tensors);
    if (cancelled) {
        result.cancelled = true;
        return result;
    }
    if (const auto& c = candidate.manifest().gradientConvention) {
        s.gradientConvention = c->toString();
    }
    judgeCarriedState(result, ReductionPaths::build(reference, candidate));
    judgeConventionFactor(result, candidate.manifest());
    if (!candidate.manifest().clipSteps.empty()) {
        const auto context = contextFor(reference, candidate, options);
        judgeClipCoefficient(result, reference.manifest(), candidate.manifest(), &context);
    }
    assembleVerdicts(result, reference.manifest().modules);
    const auto environment = environmentDiff(reference.manifest(), candidate.manifest());
    if (applyDrift(result, environment, reference.manifest().modules) > 0) {
        result.diagnostics.push_back(makeWarning(
            DiagnosticCode::KernelDrift, candidate.dir().string(),
            "the environments differ (" + environmentText(result.summary) +
                "): " + driftText(result.summary) + "; these are not counted as divergent"));
    } else if (environment.mayChangeKernels()) {
        // Differences that cannot change a kernel (thread counts, the python version) stay
        // in the summary as information: a same-machine pair always has some.
        result.diagnostics.push_back(
            makeWarning(DiagnosticCode::EnvironmentDiffers, candidate.dir().string(),
                        "the environments differ: " + environmentText(result.summary)));
    }
    // Stored only if no file changed while it was compared: the key is taken again (cheap:
    // the CRCs of files whose inode, size and times are unchanged are remembered) and must match.
    if (!cacheKey.empty() && diffCacheKey(reference.dir(), candidate.dir(), options) == cacheKey &&
        !storeCachedDiff(cacheKey, result).empty()) {
        // Taken after the key: a file written in between at worst points the fingerprint at an
        // older entry, which the content check of the next open rejects.
        rememberFingerprint(diffCacheFingerprint(reference.dir(), candidate.dir(), options),
                            cacheKey);
    }
    return result;
}

ComparedReference referenceForComparison(const Bundle& reference, const Bundle& candidate) {
    ComparedReference out;
    LeftOut leftOut;
    out.view = referenceView(reference, candidate, &leftOut);
    const auto leftOutCompiled = leftOut.compiled;
    if (leftOut.stageContainers > 0) {
        // Each stage's copy holds other layers than the reference's module: never replicas.
        std::string held;
        for (const auto& [name, slices] : candidate.manifest().stageSlices) {
            held += (held.empty() ? "" : "; ") + name + " (" + slices + ")";
        }
        out.notes.push_back(makeWarning(
            DiagnosticCode::PipelineStageContainers, candidate.dir().string(),
            "the candidate is pipelined: modules holding one stage's slice of the layers are "
            "compared by the layers they hold, not as a whole: left out " +
                std::to_string(leftOut.stageContainers) +
                " activation tensors of the reference's " + held));
    }
    if (leftOutCompiled > 0) {
        // The report says how the two were compared: the reference ran these modules eagerly.
        out.notes.push_back(makeWarning(
            DiagnosticCode::CompiledBlocks, candidate.dir().string(),
            "the candidate runs modules inside compiled blocks (torch.compile): compared at "
            "the blocks' boundaries; left out " +
                std::to_string(leftOutCompiled) +
                " activation tensors of the uncompiled reference inside them"));
    }
    return out;
}

DiffResult diffBundles(const Bundle& referenceBundle, const Bundle& candidate,
                       const DiffOptions& options, const ProgressFn& progress,
                       const TensorResultFn& onTensor) {
    // A candidate's recomputed forwards are compared with the reference's forward; what the
    // candidate ran inside compiled blocks is compared at the blocks' boundaries.
    const auto compared = referenceForComparison(referenceBundle, candidate);
    const Bundle& reference = compared.view ? *compared.view : referenceBundle;
    std::string cacheKey;
    if (options.useCache) {
        cacheKey = diffCacheKey(reference.dir(), candidate.dir(), options);
        if (auto cached = loadCachedDiff(cacheKey)) {
            replayCached(*cached, progress, onTensor);
            return std::move(*cached);
        }
    }
    const auto ids = tensorsToCompare(reference, candidate, options);
    std::vector<std::size_t> all(ids.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    auto done = compareTensorSubset(reference, candidate, options, ids, all, progress, onTensor);
    return finishDiff(reference, candidate, options, std::move(done.tensors), done.cancelled,
                      cacheKey, compared.notes);
}

} // namespace ttrace
