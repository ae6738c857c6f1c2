// From two directories to an opened pair: the manifests' refusal, the summary cache's answer by
// content, and the open of both bundles (with --partial, on their finished steps).
#include "compare/diff_pair_steps.h"
#include "compare/pair_checks.h"

#include "ttrace/compare/cache_fingerprint.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/io/capture_status.h"

#include <set>

namespace ttrace {
namespace {

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
    const auto ids = diffTensorIds(reference, candidate, options);
    const std::set<TensorId> compared(ids.begin(), ids.end());
    std::set<TensorId> leftOut;
    for (const auto* bundle : {&reference, &candidate}) {
        for (const auto& [id, shards] : bundle->tensors()) {
            if (id.variant == "nominal" && !compared.contains(id)) {
                leftOut.insert(id);
            }
        }
    }
    std::string iterations;
    for (const auto it : *options.onlyIterations) {
        iterations += (iterations.empty() ? "" : ", ") + std::to_string(it);
    }
    return makeWarning(DiagnosticCode::PartialComparison, "",
                       "partial: compared " + std::to_string(compared.size()) +
                           " tensors of the iterations every rank finished (" +
                           (iterations.empty() ? std::string("none") : iterations) +
                           "); left out " + std::to_string(leftOut.size() + leftOutOnDisk) +
                           " tensors of unfinished steps");
}

} // namespace

PairManifests readPairManifests(const std::filesystem::path& reference,
                                const std::filesystem::path& candidate) {
    Diagnostics unread; // reported by the open, which a readable pair goes on to
    PairManifests out;
    out.reference = readManifest(reference, unread);
    out.candidate = readManifest(candidate, unread);
    return out;
}

DiffResult earlyResult(const std::filesystem::path& reference,
                       const std::filesystem::path& candidate, Diagnostics diagnostics,
                       bool cancelled) {
    DiffResult early;
    early.summary.referenceDir = reference.string();
    early.summary.candidateDir = candidate.string();
    early.diagnostics = std::move(diagnostics);
    early.cancelled = cancelled;
    early.summary.clean = cancelled;
    return early;
}

std::optional<DiffResult> manifestRefusal(const PairManifests& manifests,
                                          const std::filesystem::path& reference,
                                          const std::filesystem::path& candidate,
                                          const DiffOptions& options) {
    if (!manifests.reference || !manifests.candidate) {
        return std::nullopt;
    }
    auto check = checkManifestPair(*manifests.reference, *manifests.candidate, reference, candidate,
                                   options.referenceIsCandidate);
    if (check.comparable) {
        return std::nullopt;
    }
    return earlyResult(reference, candidate, std::move(check.problems), false);
}

// A cached answer is given only after the content check: the key holds the CRC-32 of every
// byte of both bundles, read now (what a cache keyed by names, sizes and times cannot see: a
// value changed in place with the mtime restored). The CRCs are remembered for this process,
// so on a miss the open's integrity check does not read the files again.
std::optional<DiffResult> contentCached(const std::filesystem::path& reference,
                                        const std::filesystem::path& candidate,
                                        const DiffOptions& options, const ProgressFn& progress) {
    if (progress && !progress(0.0, "checking the summary cache against the bundles' bytes")) {
        return std::nullopt;
    }
    const auto key = diffCacheKey(reference, candidate, options);
    auto cached = loadCachedDiff(key);
    if (cached) {
        // Verified by content: the next open may show this entry before its own check.
        rememberFingerprint(diffCacheFingerprint(reference, candidate, options), key);
    }
    return cached;
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

OpenedPair openCheckedPair(const std::filesystem::path& reference,
                           const std::filesystem::path& candidate, const DiffOptions& options,
                           const DiffCallbacks& cb) {
    OpenedPair pair;
    auto scaled = [&cb](double offset, double width) {
        return [&cb, offset, width](double f, std::string_view what) {
            return !cb.progress || cb.progress(offset + width * f, what);
        };
    };
    pair.options = options;
    std::size_t leftOut = 0;
    auto& ref = pair.reference;
    auto& cand = pair.candidate;
    ref = openSide(reference, scaled(0.0, 0.1), pair.options, leftOut);
    cand = ref.cancelled ? BundleOpenResult{}
                         : openSide(candidate, scaled(0.1, 0.1), pair.options, leftOut);
    pair.diagnostics = sideDiagnostics(ref, cand);
    bool refused = false;
    if (ref.bundle && cand.bundle) {
        auto check = checkBundlePair(*ref.bundle, *cand.bundle, options.referenceIsCandidate);
        // A pair in the wrong order, the same bundle twice or another model: any analysis
        // would be a confident wrong story (every front end shows the refusal alone).
        refused = !check.comparable;
        for (auto& d : check.problems) {
            pair.diagnostics.push_back(std::move(d));
        }
    }
    if (pair.options.onlyIterations && ref.bundle && cand.bundle) {
        pair.diagnostics.push_back(partialNote(*ref.bundle, *cand.bundle, pair.options, leftOut));
    }
    if (cb.onOpened && !ref.cancelled && !cand.cancelled) {
        cb.onOpened(ref.bundle ? &ref.bundle->manifest() : nullptr,
                    cand.bundle ? &cand.bundle->manifest() : nullptr, pair.diagnostics);
    }
    if (ref.cancelled || cand.cancelled || !ref.bundle || !cand.bundle || refused) {
        pair.early =
            earlyResult(reference, candidate, pair.diagnostics, ref.cancelled || cand.cancelled);
        return pair;
    }
    // A result of bundles with errors is not cached: the problem should be seen again; nor is
    // a partial comparison, which the finished capture will replace.
    pair.options.useCache =
        options.useCache && !hasErrors(pair.diagnostics) && !pair.options.onlyIterations;
    return pair;
}

std::optional<DiffResult> cachedDiff(const std::filesystem::path& reference,
                                     const std::filesystem::path& candidate,
                                     const DiffOptions& options, const DiffCallbacks& cb) {
    if (!options.useCache) {
        return std::nullopt;
    }
    const auto manifests = readPairManifests(reference, candidate);
    if (manifestRefusal(manifests, reference, candidate, options)) {
        return std::nullopt; // refused by openDiffPair, before the cache's hashing of every byte
    }
    auto cached = contentCached(reference, candidate, options, cb.progress);
    if (cached) {
        // A hit still tells the front end what it is looking at.
        if (cb.onOpened) {
            cb.onOpened(manifests.reference ? &*manifests.reference : nullptr,
                        manifests.candidate ? &*manifests.candidate : nullptr, cached->diagnostics);
        }
        replayCached(*cached, cb.progress, cb.onTensor);
    }
    return cached;
}

OpenedPair openDiffPair(const std::filesystem::path& reference,
                        const std::filesystem::path& candidate, const DiffOptions& options,
                        const DiffCallbacks& cb) {
    const auto manifests = readPairManifests(reference, candidate);
    if (auto refused = manifestRefusal(manifests, reference, candidate, options)) {
        if (cb.onOpened) {
            cb.onOpened(&*manifests.reference, &*manifests.candidate, refused->diagnostics);
        }
        OpenedPair pair;
        pair.options = options;
        pair.diagnostics = refused->diagnostics;
        pair.early = std::move(*refused);
        return pair;
    }
    return openCheckedPair(reference, candidate, options, cb);
}

void addOpeningDiagnostics(const Diagnostics& opening, DiffResult& diff) {
    diff.diagnostics.insert(diff.diagnostics.begin(), opening.begin(), opening.end());
    diff.summary.clean = diff.summary.clean && !hasErrors(diff.diagnostics);
}

} // namespace ttrace
