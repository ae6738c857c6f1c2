#pragma once
// The one engine API every front end uses: compare a candidate bundle with its reference.
#include "ttrace/compare/diff_result.h"
#include "ttrace/compare/tolerance.h"
#include "ttrace/io/bundle.h"
#include "ttrace/io/progress.h"

#include <functional>
#include <memory>
#include <optional>
#include <set>

namespace ttrace {

struct DiffOptions {
    ToleranceSettings tolerance;
    std::optional<std::int64_t> iteration;  // only this iteration
    std::optional<std::int64_t> microBatch; // only this micro-batch
    bool useCache = true;                   // summary cache beside the bundle (or user cache)
    // An unfinished capture (no manifest, status records) is compared on the steps every
    // rank finished instead of being refused (`ttrace diff --partial`).
    bool partial = false;
    // Only these nominal iterations (set from the finished steps of an unfinished capture).
    std::optional<std::set<std::int64_t>> onlyIterations;
    // A bundle captured as a candidate may serve as the reference when the user says so
    // (`ttrace diff --reference-is-candidate`); otherwise such a pair is refused.
    bool referenceIsCandidate = false;
};

// Called from worker threads as each tensor finishes, so a GUI can stream statistics in.
using TensorResultFn = std::function<void(const TensorResult&)>;

// Compares two opened bundles. Memory stays bounded by a few tensors at a time. Never throws
// on bad input: problems go to DiffResult::diagnostics or to the tensor's findings.
DiffResult diffBundles(const Bundle& reference, const Bundle& candidate, const DiffOptions& options,
                       const ProgressFn& progress = {}, const TensorResultFn& onTensor = {});

// Called once both bundles are opened, before any tensor is compared: their manifests (null
// for a bundle that could not be opened at all) and the problems found while opening (their
// locations start with "reference" or "candidate"). On a cache hit only the manifests are read.
using OpenedFn = std::function<void(const Manifest* reference, const Manifest* candidate,
                                    const Diagnostics& problems)>;

struct DiffCallbacks {
    ProgressFn progress; // opening takes the first 20% (10% per bundle), comparing the rest
    TensorResultFn onTensor;
    OpenedFn onOpened;
};

// The diff session (diff_session.h) with callbacks instead of a listener, for callers that
// want only the result: checks the summary cache by content, opens both bundles, reports them,
// then diffs. Bundles with errors are still diffed (tensors that cannot be merged come out
// invalid); only a bundle that cannot be opened at all ends it early. Never throws on bad
// input.
DiffResult diffBundleDirs(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate, const DiffOptions& options,
                          const DiffCallbacks& callbacks);
DiffResult diffBundleDirs(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate, const DiffOptions& options,
                          const ProgressFn& progress = {}, const TensorResultFn& onTensor = {});

} // namespace ttrace
