#pragma once
// Drift: in a comparison of two runs of one layout across a software or hardware change, the
// rounding of a changed kernel told apart from a bug (docs/cross-version.md). Only where the
// manifests say a kernel may have changed, and only within kDriftBound.
#include "ttrace/compare/diff_result.h"
#include "ttrace/compare/environment_diff.h"
#include "ttrace/io/manifest.h"

#include <string>
#include <vector>

namespace ttrace {

// A changed kernel may exceed the reference's tolerance by at most this factor. The tolerance
// is 4x the round-off floor (docs/tolerance.md, kDefaultSafetyFactor), so drift is at most 40x
// the floor: another kernel of the same dtype re-rounds every reduction (up to one rounding
// per element per reduction step where the reference's order had one per partial), which is
// an order of magnitude more round-off than the reference's own floor, not more. A change of
// precision (TF32 for FP32, BF16 for FP32) is 2^10 times and more: a divergence, as a bug.
// Same as kIntroducedFactor: what one module's inputs cannot explain, a kernel cannot either.
inline constexpr double kDriftBound = 10.0;

// After assembleVerdicts: tensors with 1 < ratio <= kDriftBound become Drift at modules
// `environment` allows to drift, and (inherited drift) at modules whose divergence their inputs
// explain (origin Inherited) when no module introduces a divergence beyond drift; modules
// whose own kernel changed get origin Drift. Re-assembles the verdicts when anything changed.
// Fills the summary's environment lines and drift bound. Returns the number of drift tensors.
std::size_t applyDrift(DiffResult& result, const EnvironmentDiff& environment,
                       const std::vector<ModuleInfo>& modules);

// "N tensors that drift (max ratio X, within the drift bound of 10x the tolerance) ...";
// empty when none drifts.
std::string driftText(const DiffSummary& summary);

// What differs between the two manifests' environments, one clause per change joined by "; ",
// or why nothing may drift (same environment, or a side recorded none).
std::string environmentText(const DiffSummary& summary);

} // namespace ttrace
