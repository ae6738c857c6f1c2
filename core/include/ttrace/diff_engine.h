#pragma once
// The one engine API every front end uses: compare a candidate bundle with its reference.
#include "ttrace/bundle.h"
#include "ttrace/diff_result.h"
#include "ttrace/progress.h"
#include "ttrace/tolerance.h"

#include <functional>
#include <memory>
#include <optional>

namespace ttrace {

struct DiffOptions {
    ToleranceSettings tolerance;
    std::optional<std::int64_t> iteration;  // only this iteration
    std::optional<std::int64_t> microBatch; // only this micro-batch
    bool useCache = true;                   // summary cache beside the bundle (or user cache)
};

// Called from worker threads as each tensor finishes, so a GUI can stream statistics in.
using TensorResultFn = std::function<void(const TensorResult&)>;

// Compares two opened bundles. Memory stays bounded by a few tensors at a time. Never throws
// on bad input: problems go to DiffResult::diagnostics or to the tensor's findings.
DiffResult diffBundles(const Bundle& reference, const Bundle& candidate, const DiffOptions& options,
                       const ProgressFn& progress = {}, const TensorResultFn& onTensor = {});

// Convenience: opens both directories, then diffs. Opening errors end up in diagnostics.
DiffResult diffBundleDirs(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate, const DiffOptions& options,
                          const ProgressFn& progress = {}, const TensorResultFn& onTensor = {});

} // namespace ttrace
