#pragma once
// Compares one logical tensor of two bundles: merge both, measure the perturbed reference's
// noise floor, derive the tolerance, compute metrics, histogram and verdict. Private to core.
#include "compare/structure_check.h"
#include "ttrace/compare/adam_conditioning.h"
#include "ttrace/compare/diff_result.h"
#include "ttrace/compare/reduction_paths.h"
#include "ttrace/compare/tolerance.h"
#include "ttrace/io/bundle.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ttrace {

// Effective noise floors of the training state after one step, keyed by (module, kind, index),
// for the next step's state tensors to inherit (see carryFloor in tolerance.h).
using StateFloors = std::map<std::tuple<std::string, TensorKind, std::string>, NoiseFloor>;

// Per-element conditioning terms of the training state after one step, carried like the floors
// (see compare/optimizer_conditioning.h).
using StateTerms =
    std::map<std::tuple<std::string, TensorKind, std::string>, std::vector<ConditioningTerm>>;

struct ComparisonContext {
    const Bundle& reference;
    const Bundle& candidate;
    const ToleranceSettings& tolerance;
    std::vector<std::string> perturbedVariants; // reference variants other than nominal
    int maxDepth = 0;
    StateFloors carried; // from the previous iteration
    StateTerms carriedTerms;
    ModuleCalls bothSides;         // module calls captured on both sides (structural divergences)
    bool shardedOptimizer = false; // the candidate shards optimizer state over data parallelism
    // The analytic bound's reduction paths (nothing: the one-layer form k * C^d * eps).
    std::shared_ptr<const ReductionPaths> reductions;
};

// Holds at most the two merged nominal tensors plus one perturbed variant at a time (the
// element-wise path; the clean path of clean_comparison.h holds the perturbed variants too,
// in their stored dtype). Tries compareClean first unless `tryClean` is false (tests compare
// the two paths).
TensorResult compareTensor(const ComparisonContext& context, const TensorId& id,
                           bool tryClean = true);

// The tolerance of a tensor whose reference is stored as `referenceDtype`, given the noise
// floor measured from its perturbed variants (if any).
Tolerance toleranceFor(const ComparisonContext& context, const TensorId& id, DType referenceDtype,
                       std::optional<NoiseFloor> floor);

// A finding `unstable-floor` on `r` when its floor rests on perturbed variants that disagree by
// more than kUnstableFloorFactor (tolerance.h): how much, and that more variants settle it.
void noteUnstableFloor(TensorResult& r);

// The effective floor of a reference state tensor alone (no candidate needed): used to carry
// floors through iterations a filtered diff does not compare.
std::optional<NoiseFloor> stateFloor(const ComparisonContext& context, const TensorId& id);

// Whether the candidate shards its optimizer's state over data parallelism: as its manifest
// declares it (optimizer_sharding); in bundles that declare nothing, main gradients or
// optimizer state held as flat ranges (a distributed optimizer) or in more disjoint pieces
// than tensor parallelism makes (FSDP).
bool shardsOptimizerState(const Bundle& candidate);

// Records the effective floors of this iteration's state tensors into `out`.
void recordStateFloor(const TensorId& id, const NoiseFloor& floor, StateFloors& out);

} // namespace ttrace
