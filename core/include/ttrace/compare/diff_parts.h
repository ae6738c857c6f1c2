#pragma once
// The stages of one diff, for front ends that run the per-tensor comparisons elsewhere (the MPI
// front end compares a share of the tensors in each process). The diff session
// (diff_session.h) runs the same steps in one process, so the results are the same.
#include "ttrace/compare/diff_engine.h"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

// Both bundles opened, their problems (locations start with "reference" or "candidate"), and
// the options the comparison runs under (with --partial: narrowed to the finished steps; the
// cache switched off for bundles with errors or a partial comparison).
struct OpenedPair {
    BundleOpenResult reference, candidate;
    Diagnostics diagnostics;
    DiffOptions options;
    // Set when the diff ends here (cancelled, or a bundle that cannot be opened at all): the
    // result `diffBundleDirs` gives.
    std::optional<DiffResult> early;
};

// The summary cache's answer for the pair, checked against the bundles' bytes (nothing when
// the cache is off or misses).
std::optional<DiffResult> cachedDiff(const std::filesystem::path& reference,
                                     const std::filesystem::path& candidate,
                                     const DiffOptions& options, const DiffCallbacks& callbacks);

OpenedPair openDiffPair(const std::filesystem::path& reference,
                        const std::filesystem::path& candidate, const DiffOptions& options,
                        const DiffCallbacks& callbacks);

// The tensors a diff compares, in the engine's order (iteration first). Indices into this list
// name tensors between processes.
std::vector<TensorId> diffTensorIds(const Bundle& reference, const Bundle& candidate,
                                    const DiffOptions& options);

struct SubsetComparison {
    std::vector<std::size_t> indices;  // into the ids, ascending
    std::vector<TensorResult> tensors; // one per index
    bool cancelled = false;
};

// Compares ids[i] for i in `subset` (ascending). A tensor of the training state inherits the
// previous iteration's floors and conditioning terms of the same (module, state kind, index),
// so `subset` must hold all of them or none (stateAffinity in tensor_shard_plan.h).
SubsetComparison compareTensorSubset(const Bundle& reference, const Bundle& candidate,
                                     const DiffOptions& options, const std::vector<TensorId>& ids,
                                     const std::vector<std::size_t>& subset,
                                     const ProgressFn& progress = {},
                                     const TensorResultFn& onTensor = {});

// The analysis after every tensor is compared: summary, module verdicts, timeline; stores the
// result in the summary cache under `cacheKey` (none when empty) if the bundles are unchanged.
// `tensors` is one result per id of diffTensorIds, in that order.
// `notes` go first in its diagnostics (and into the cache with it).
DiffResult finishDiff(const Bundle& reference, const Bundle& candidate, const DiffOptions& options,
                      std::vector<TensorResult> tensors, bool cancelled,
                      const std::string& cacheKey, const Diagnostics& notes = {});

// The reference as a comparison with this candidate sees it (compare/reference_view.h: a
// candidate's recomputed forwards against the reference's forward, compiled blocks at their
// boundaries): `view` is null when the reference is used as it is. `notes` are what the report
// says about it. diffBundles applies it; a caller of the parts compares against
// `view ? *view : reference` and gives `notes` to finishDiff.
struct ComparedReference {
    std::shared_ptr<const Bundle> view;
    Diagnostics notes;
};
ComparedReference referenceForComparison(const Bundle& reference, const Bundle& candidate);

// The problems found while opening go first; a run with errors is not clean.
void addOpeningDiagnostics(const Diagnostics& opening, DiffResult& diff);

} // namespace ttrace
