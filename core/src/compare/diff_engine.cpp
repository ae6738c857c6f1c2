#include "ttrace/diff_engine.h"

#include "compare/convention_check.h"
#include "compare/optimizer_conditioning.h"
#include "compare/pair_checks.h"
#include "compare/tensor_comparison.h"
#include "ttrace/cache_fingerprint.h"
#include "ttrace/capture_status.h"
#include "ttrace/diff_cache.h"
#include "ttrace/verdict.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <map>
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

void replayCached(const DiffResult& cached, const ProgressFn& progress,
                  const TensorResultFn& onTensor) {
    for (const auto& t : cached.tensors) {
        if (onTensor) {
            onTensor(t);
        }
    }
    if (progress) {
        progress(1.0, "cached");
    }
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

// A diff of iteration N alone still needs the floors the training state carried into it, so
// the reference's state tensors of the earlier iterations are measured (floors only).
void carryStateFloorsUpTo(ComparisonContext& ctx, std::int64_t iteration) {
    std::map<std::int64_t, std::vector<TensorId>> earlier;
    for (const auto& [id, shards] : ctx.reference.tensors()) {
        if (id.variant == "nominal" && id.iteration < iteration &&
            (id.kind == TensorKind::ParamAfterStep || id.kind == TensorKind::OptimizerState)) {
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

} // namespace

DiffResult diffBundles(const Bundle& reference, const Bundle& candidate, const DiffOptions& options,
                       const ProgressFn& progress, const TensorResultFn& onTensor) {
    std::string cacheKey;
    if (options.useCache) {
        cacheKey = diffCacheKey(reference.dir(), candidate.dir(), options);
        if (auto cached = loadCachedDiff(cacheKey)) {
            replayCached(*cached, progress, onTensor);
            return std::move(*cached);
        }
    }
    DiffResult result;
    auto& s = result.summary;
    s.referenceDir = reference.dir().string();
    s.candidateDir = candidate.dir().string();
    s.precision = reference.manifest().precision;
    s.referenceRanks = reference.manifest().worldSize;
    s.candidateRanks = candidate.manifest().worldSize;

    ComparisonContext ctx{reference, candidate, options.tolerance, {}, 0, {}, {}, {}, false};
    for (const auto& v : reference.manifest().variants) {
        if (v != "nominal") {
            ctx.perturbedVariants.push_back(v);
        }
    }
    s.perturbedVariants = ctx.perturbedVariants.size();
    for (const auto& m : reference.manifest().modules) {
        ctx.maxDepth = std::max(ctx.maxDepth, m.depth);
    }
    ctx.bothSides = moduleCallsOnBothSides(reference, candidate);
    ctx.shardedOptimizer = shardsOptimizerState(candidate);

    const auto ids = tensorsToCompare(reference, candidate, options);
    result.tensors.resize(ids.size());
    ProgressTracker tracker(progress, ids.size());
    if (!ids.empty()) {
        carryStateFloorsUpTo(ctx, ids.front().iteration);
    }
    // Iterations in order (ids sort by iteration first): each one's state tensors inherit the
    // previous one's effective floors.
    for (std::size_t begin = 0; begin < ids.size() && !tracker.cancelled();) {
        std::size_t end = begin;
        while (end < ids.size() && ids[end].iteration == ids[begin].iteration) {
            ++end;
        }
        compareRange(ctx, ids, begin, end, result.tensors, tracker, onTensor);
        for (std::size_t i = begin; i < end; ++i) {
            const auto& tol = result.tensors[i].tolerance;
            if (tol.perturbedSamples > 0) {
                recordStateFloor(ids[i], {tol.floorMean, tol.floorSpread, tol.perturbedSamples},
                                 ctx.carried);
            }
        }
        carryStateTerms(ids, begin, end, result.tensors, ctx.carriedTerms);
        begin = end;
    }
    if (tracker.cancelled()) {
        result.cancelled = true;
        return result;
    }
    if (const auto& c = candidate.manifest().gradientConvention) {
        s.gradientConvention = c->toString();
    }
    judgeConventionFactor(result, candidate.manifest());
    assembleVerdicts(result, reference.manifest().modules);
    // Stored only if no file changed while it was compared: the key is taken again (cheap:
    // the CRCs of files whose inode, size and times are unchanged are remembered) and must match.
    if (options.useCache && diffCacheKey(reference.dir(), candidate.dir(), options) == cacheKey &&
        !storeCachedDiff(cacheKey, result).empty()) {
        // Taken after the key: a file written in between at worst points the fingerprint at an
        // older entry, which the content check of the next open rejects.
        rememberFingerprint(diffCacheFingerprint(reference.dir(), candidate.dir(), options),
                            cacheKey);
    }
    return result;
}

namespace {

// A cached answer is given only after the content check: the key holds the CRC-32 of every
// byte of both bundles, read now (what a cache keyed by names, sizes and times cannot see: a
// value changed in place with the mtime restored). The CRCs are remembered for this process,
// so on a miss the open's integrity check does not read the files again. A hit still tells
// the front end what it is looking at: the manifests alone are cheap.
std::optional<DiffResult> fromCache(const std::filesystem::path& reference,
                                    const std::filesystem::path& candidate,
                                    const DiffOptions& options, const DiffCallbacks& cb) {
    if (!options.useCache) {
        return std::nullopt;
    }
    if (cb.progress && !cb.progress(0.0, "checking the summary cache against the bundles' bytes")) {
        return std::nullopt; // cancelled: the open that follows notices it at once
    }
    const auto key = diffCacheKey(reference, candidate, options);
    auto cached = loadCachedDiff(key);
    if (!cached) {
        return std::nullopt;
    }
    // Verified by content: the next open may show this entry before its own check.
    rememberFingerprint(diffCacheFingerprint(reference, candidate, options), key);
    if (cb.onOpened) {
        Diagnostics ignored; // a manifest that read fine when the entry was cached
        const auto ref = readManifest(reference, ignored);
        const auto cand = readManifest(candidate, ignored);
        cb.onOpened(ref ? &*ref : nullptr, cand ? &*cand : nullptr, cached->diagnostics);
    }
    replayCached(*cached, cb.progress, cb.onTensor);
    return cached;
}

Diagnostics sideDiagnostics(BundleOpenResult& ref, BundleOpenResult& cand) {
    Diagnostics out;
    for (auto* opened : {&ref, &cand}) {
        const std::string side = opened == &ref ? "reference" : "candidate";
        for (auto& d : opened->diagnostics) {
            d.location = side + " " + d.location;
            out.push_back(std::move(d));
        }
    }
    return out;
}

// Opens one side; with --partial an unfinished capture is opened on its finished steps, and
// the comparison is narrowed to the iterations finished on every partial side.
BundleOpenResult openSide(const std::filesystem::path& dir, const ProgressFn& progress,
                          DiffOptions& options, std::size_t& leftOut) {
    if (!options.partial || !isUnfinishedCapture(dir)) {
        return openBundle(dir, progress);
    }
    auto partial = openPartialBundle(dir, progress);
    std::set<std::int64_t> done;
    for (const auto& [variant, iteration] : partial.stepsDone) {
        if (variant == "nominal") {
            done.insert(iteration);
        }
    }
    if (options.onlyIterations) {
        std::erase_if(done, [&](std::int64_t it) { return !options.onlyIterations->contains(it); });
    }
    options.onlyIterations = std::move(done);
    leftOut += partial.leftOutTensors;
    return std::move(partial.opened);
}

// How much of the bundles a partial comparison covers, as a warning every front end shows.
Diagnostic partialNote(const Bundle& reference, const Bundle& candidate, const DiffOptions& options,
                       std::size_t leftOutOnDisk) {
    std::set<TensorId> compared, leftOut;
    for (const auto* bundle : {&reference, &candidate}) {
        for (const auto& [id, shards] : bundle->tensors()) {
            if (id.variant != "nominal") {
                continue;
            }
            (selected(id, options) ? compared : leftOut).insert(id);
        }
    }
    std::string iterations;
    for (const auto it : *options.onlyIterations) {
        iterations += (iterations.empty() ? "" : ", ") + std::to_string(it);
    }
    return makeWarning("partial-comparison", "",
                       "partial: compared " + std::to_string(compared.size()) +
                           " tensors of the iterations every rank finished (" +
                           (iterations.empty() ? std::string("none") : iterations) +
                           "); left out " + std::to_string(leftOut.size() + leftOutOnDisk) +
                           " tensors of unfinished steps");
}

} // namespace

DiffResult diffBundleDirs(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate, const DiffOptions& options,
                          const DiffCallbacks& cb) {
    // The cache is checked before opening (indexing every rank file costs more than reading
    // the bytes for the key), but only against the content, never against names and times.
    if (auto cached = fromCache(reference, candidate, options, cb)) {
        return std::move(*cached);
    }
    DiffResult result;
    result.summary.referenceDir = reference.string();
    result.summary.candidateDir = candidate.string();
    auto scaled = [&cb](double offset, double width) {
        return [&cb, offset, width](double f, std::string_view what) {
            return !cb.progress || cb.progress(offset + width * f, what);
        };
    };
    DiffOptions inner = options;
    std::size_t leftOut = 0;
    auto ref = openSide(reference, scaled(0.0, 0.1), inner, leftOut);
    auto cand =
        ref.cancelled ? BundleOpenResult{} : openSide(candidate, scaled(0.1, 0.1), inner, leftOut);
    result.diagnostics = sideDiagnostics(ref, cand);
    if (ref.bundle && cand.bundle) {
        for (auto& d : checkBundlePair(*ref.bundle, *cand.bundle)) {
            result.diagnostics.push_back(std::move(d));
        }
    }
    if (inner.onlyIterations && ref.bundle && cand.bundle) {
        result.diagnostics.push_back(partialNote(*ref.bundle, *cand.bundle, inner, leftOut));
    }
    if (cb.onOpened && !ref.cancelled && !cand.cancelled) {
        cb.onOpened(ref.bundle ? &ref.bundle->manifest() : nullptr,
                    cand.bundle ? &cand.bundle->manifest() : nullptr, result.diagnostics);
    }
    if (ref.cancelled || cand.cancelled) {
        result.cancelled = true;
        return result;
    }
    if (!ref.bundle || !cand.bundle) {
        result.summary.clean = false;
        return result;
    }
    // A result of bundles with errors is not cached: the problem should be seen again; nor is
    // a partial comparison, which the finished capture will replace.
    inner.useCache = options.useCache && !hasErrors(result.diagnostics) && !inner.onlyIterations;
    auto diff = diffBundles(*ref.bundle, *cand.bundle, inner, scaled(0.2, 0.8), cb.onTensor);
    diff.diagnostics.insert(diff.diagnostics.begin(), result.diagnostics.begin(),
                            result.diagnostics.end());
    diff.summary.clean = diff.summary.clean && !hasErrors(diff.diagnostics);
    return diff;
}

DiffResult diffBundleDirs(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate, const DiffOptions& options,
                          const ProgressFn& progress, const TensorResultFn& onTensor) {
    return diffBundleDirs(reference, candidate, options, DiffCallbacks{progress, onTensor, {}});
}

} // namespace ttrace
