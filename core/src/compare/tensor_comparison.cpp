#include "compare/tensor_comparison.h"

#include "compare/clean_comparison.h"
#include "compare/optimizer_conditioning.h"
#include "compare/placement_resolution.h"

#include "ttrace/compare/bug_class.h"
#include "ttrace/compare/metrics.h"
#include "ttrace/compare/shape_diagnosis.h"
#include "ttrace/compare/verdict.h"
#include "ttrace/io/number_text.h"
#include "ttrace/merge/merge.h"

#include <algorithm>
#include <limits>

namespace ttrace {
namespace {

std::string describeShards(const std::vector<ShardRef>& shards) {
    const auto& p = shards.front().placement;
    if (shards.size() == 1 && p.combine == Combine::Copy && p.kind == PlacementKind::Boxes &&
        p.boxes.size() == 1 &&
        elementCount(shards.front().localShape) == elementCount(p.globalShape)) {
        return "full on rank " + std::to_string(shards.front().rank);
    }
    std::string text(combineName(p.combine));
    text += p.kind == PlacementKind::Flat ? " flat" : " boxes";
    text += " over " + std::to_string(shards.size()) + (shards.size() == 1 ? " rank" : " ranks");
    return text;
}

void appendFindings(Diagnostics& out, Diagnostics in, const std::string& side) {
    for (auto& d : in) {
        d.location = side + " " + d.location;
        out.push_back(std::move(d));
    }
}

bool hasFinding(const Diagnostics& findings, DiagnosticCode code) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Diagnostic& d) { return d.code == code; });
}

// Relative errors of each perturbed reference variant against the nominal one.
std::optional<NoiseFloor> measureFloor(const ComparisonContext& ctx, const TensorId& id,
                                       const FullTensor& nominal, Diagnostics& findings) {
    std::vector<double> errors;
    for (const auto& variant : ctx.perturbedVariants) {
        const TensorId pid = id.withVariant(variant);
        if (!ctx.reference.shards(pid)) {
            continue; // not captured in this variant: the analytic bound stands in
        }
        auto merged = mergeTensor(ctx.reference, pid);
        if (!merged.tensor || merged.tensor->values.size() != nominal.values.size()) {
            appendFindings(findings, std::move(merged.findings), "reference");
            continue;
        }
        errors.push_back(relativeError(merged.tensor->values, nominal.values));
    }
    if (errors.empty()) {
        return std::nullopt;
    }
    return noiseFloor(errors);
}

// The capture's layout note and annotate hint: the candidate's first, else the reference's.
void noteLayout(const std::vector<ShardRef>* shards, InvalidReason& out) {
    for (const auto& s : shards ? *shards : std::vector<ShardRef>{}) {
        if (out.layoutNote.empty()) {
            out.layoutNote = s.layoutNote;
        }
        if (out.annotateHint.empty()) {
            out.annotateHint = s.annotateHint;
        }
    }
}

InvalidReason invalidReason(const std::vector<ShardRef>* ref, const std::vector<ShardRef>* cand) {
    InvalidReason why;
    if (ref) {
        why.referenceShape = shapeToString(ref->front().placement.globalShape);
    }
    if (cand) {
        why.candidateShape = shapeToString(cand->front().placement.globalShape);
        why.candidateLayout =
            describeShards(*cand) + " (" + cand->front().placement.describe() + ")";
    }
    noteLayout(cand, why);
    noteLayout(ref, why);
    return why;
}

ParallelSizes parallelSizes(const Manifest& candidate) {
    ParallelSizes sizes = candidate.parallel;
    sizes["micro_batches"] = candidate.microBatches;
    return sizes;
}

// The error's shape and the bug class it suggests, for a divergent tensor.
void diagnose(const ComparisonContext& ctx, const FullTensor& ref, const FullTensor& cand,
              TensorResult& r) {
    const auto parallel = parallelSizes(ctx.candidate.manifest());
    r.signatures = diagnoseShape({ref, cand, r.tolerance.value, parallel, r.findings});
    r.hint = bugClassHint(
        {r.id, r.signatures, parallel, ctx.reference.manifest().precision, ctx.shardedOptimizer});
}

std::optional<NoiseFloor> carriedFor(const ComparisonContext& ctx, const TensorId& id) {
    const auto state = carriedStateKind(id.kind);
    if (!state) {
        return std::nullopt;
    }
    const auto it = ctx.carried.find({id.module, *state, id.index});
    return it == ctx.carried.end() ? std::nullopt : std::optional<NoiseFloor>(it->second);
}

// Replicas that disagree: the merged tensor shows only the lowest rank, so a wrong copy on
// another rank is judged by its own piece's error (only then: a subset of a clean tensor is
// noisier than the whole and must not raise false alarms on its own).
double replicaRatio(const TensorResult& r, const FullTensor& cand) {
    double worst = 0.0;
    if (!hasFinding(r.findings, DiagnosticCode::ReplicaDisagree)) {
        return worst;
    }
    for (std::size_t s = 0; s < r.metrics.shards.size(); ++s) {
        if (cand.shards[s].placement.combine != Combine::Sum) {
            worst =
                std::max(worst, toleranceRatio(r.metrics.shards[s].relError, r.tolerance.value));
        }
    }
    return worst;
}

// A structural divergence: status divergent with an infinite ratio (no value can be compared,
// and none is needed: the module's outputs differ in number or shape).
void markStructural(TensorResult& r, StructuralChange change, std::string message) {
    r.structure = change;
    r.status = Status::Divergent;
    r.ratio = std::numeric_limits<double>::infinity();
    r.findings.push_back(
        makeWarning(structuralDiagnosticCode(change), "tensor " + r.id.path(), std::move(message)));
}

std::string slotName(const TensorId& id) {
    return std::string(tensorKindName(id.kind)) + "[" + id.index + "]";
}

// A tensor on one side only, of a module call both sides ran.
bool structural(const ComparisonContext& ctx, const std::vector<ShardRef>* ref,
                const std::vector<ShardRef>* cand, TensorResult& r) {
    const auto change = oneSidedChange(r.id, ref != nullptr, ctx.bothSides);
    if (change == StructuralChange::None) {
        return false;
    }
    const auto shape = shapeToString((ref ? ref : cand)->front().placement.globalShape);
    markStructural(r, change,
                   ref ? "the module ran on both sides, but the candidate's call has no " +
                             slotName(r.id) + " (the reference's has shape " + shape + ")"
                       : "the module ran on both sides, but only the candidate's call has a " +
                             slotName(r.id) + " (shape " + shape + ")");
    return true;
}

// Both sides hold the tensor, with shapes no layout of the candidate's ranks reconciles.
bool reshaped(const ComparisonContext& ctx, const Shape& ref, const Shape& cand, TensorResult& r) {
    const int ranks = ctx.candidate.manifest().worldSize;
    const auto change = shapeChange(r.id.kind, ref, cand, ranks);
    if (change == StructuralChange::None) {
        return false;
    }
    markStructural(r, change,
                   "reference shape " + shapeToString(ref) + " vs candidate shape " +
                       shapeToString(cand) + ": no layout over the candidate's " +
                       std::to_string(ranks) + " ranks turns one into the other");
    return true;
}

// Settles an inferred placement that carries alternatives. Returns the chosen hypothesis's
// merge, or nothing (the capture's own placement is compared as stored); marks `r`
// unresolved when the evidence does not decide.
std::optional<MergeResult> settlePlacement(const ComparisonContext& ctx,
                                           const std::vector<ShardRef>& ref,
                                           const std::vector<ShardRef>& cand, TensorResult& r) {
    if (!hasAlternatives(cand)) {
        return std::nullopt;
    }
    auto resolved = resolvePlacement(ctx.candidate, r.id, cand, ref.front().placement.globalShape);
    if (resolved.outcome == ResolutionOutcome::NoneFits) {
        return std::nullopt;
    }
    r.resolution = std::move(resolved.resolution);
    if (resolved.outcome == ResolutionOutcome::Unresolved) {
        r.status = Status::Unresolved;
        r.findings.push_back(makeWarning(DiagnosticCode::PlacementUnresolved,
                                         "tensor " + r.id.path(), r.resolution.toString()));
        return std::nullopt;
    }
    r.placement = describeShards(resolved.shards);
    return std::move(resolved.merged);
}

// An inferred placement (no alternatives recorded) whose copies differ: not known to be
// replicas, so their disagreement is no verdict; the placement is unresolved.
bool inferredCopiesDiffer(const MergeResult& cand, TensorResult& r) {
    if (r.placementSource != PlacementSource::Inferred ||
        !hasFinding(cand.findings, DiagnosticCode::ReplicaDisagree)) {
        return false;
    }
    r.status = Status::Unresolved;
    r.resolution.hypothesis = "replica";
    r.resolution.excluded.push_back("replica: the copies it takes for replicas differ");
    r.findings.push_back(makeWarning(DiagnosticCode::PlacementUnresolved, "tensor " + r.id.path(),
                                     r.resolution.toString()));
    return true;
}

} // namespace

std::optional<NoiseFloor> stateFloor(const ComparisonContext& ctx, const TensorId& id) {
    auto nominal = mergeTensor(ctx.reference, id);
    if (!nominal.tensor) {
        return std::nullopt;
    }
    Diagnostics ignored; // the comparison of this tensor, if any, reports them
    auto own = measureFloor(ctx, id, *nominal.tensor, ignored);
    const auto carried = carriedFor(ctx, id);
    if (own && carried) {
        return carryFloor(id.kind, *own, *carried);
    }
    return own;
}

bool shardsOptimizerState(const Bundle& candidate) {
    // Declared before inferred: what the job's optimizer is decides.
    if (const auto& declared = candidate.manifest().optimizerSharding) {
        return declared->sharded;
    }
    const auto tp = candidate.manifest().parallel.find("tp");
    const std::size_t tpSize =
        tp == candidate.manifest().parallel.end() ? 1 : static_cast<std::size_t>(tp->second);
    for (const auto& [id, shards] : candidate.tensors()) {
        const bool owned = id.kind == TensorKind::OptimizerState || id.kind == TensorKind::MainGrad;
        if (!owned || shards.empty()) {
            continue;
        }
        const auto& p = shards.front().placement;
        if (p.kind == PlacementKind::Flat ||
            (p.combine == Combine::Copy && shards.size() > tpSize)) {
            return true;
        }
    }
    return false;
}

void recordStateFloor(const TensorId& id, const NoiseFloor& floor, StateFloors& out) {
    if (id.kind == TensorKind::ParamAfterStep || id.kind == TensorKind::OptimizerState) {
        out[{id.module, id.kind, id.index}] = floor;
    }
}

Tolerance toleranceFor(const ComparisonContext& ctx, const TensorId& id, DType referenceDtype,
                       std::optional<NoiseFloor> floor) {
    ToleranceInput in;
    in.module = id.module;
    in.kind = id.kind;
    // The reference's dtype decides exactness: an integer reference admits no round-off.
    in.dtype = referenceDtype;
    const auto* info = ctx.reference.manifest().findModule(id.module);
    in.moduleDepth = info ? info->depth : 0;
    in.maxDepth = ctx.maxDepth;
    in.precision = ctx.reference.manifest().precision;
    in.floor = floor;
    in.carried = carriedFor(ctx, id);
    if (ctx.reductions) {
        if (const auto path = ctx.reductions->pathOf(id)) {
            in.pathReductions = path->reductions;
            in.pathRoundings = path->roundings;
            in.ownReductions = path->ownReductions;
            in.ownPartials = path->ownPartials;
        }
        in.provisional = ctx.reductions->provisionalOf(id);
    }
    return deriveTolerance(ctx.tolerance, in);
}

void noteUnstableFloor(TensorResult& r) {
    const auto& t = r.tolerance;
    if (!unstableFloor(t)) {
        return;
    }
    r.findings.push_back(makeWarning(
        DiagnosticCode::UnstableFloor, "tensor " + r.id.path(),
        "its " + std::to_string(t.perturbedSamples) + " perturbed variants disagree by " +
            formatNumber(t.floorDisagreement) + "x (floors " + formatNumber(t.floorMin) + " to " +
            formatNumber(t.floorMax) +
            "): a ratio up to that factor is provisional; capture more variants"));
}

namespace {

// What a tensor is, from whichever side holds it (the candidate's when both do).
void describeTensor(TensorResult& r, const std::vector<ShardRef>& shards) {
    r.shape = shards.front().placement.globalShape;
    r.dtype = shards.front().dtype;
    r.placement = describeShards(shards);
    r.placementSource = shards.front().placement.source;
    for (const auto& s : shards) {
        r.placementSource = weakerSource(r.placementSource, s.placement.source);
    }
}

// A tensor one side lacks: a structural change at its module, else missing.
void oneSided(const ComparisonContext& ctx, const std::vector<ShardRef>* refShards,
              const std::vector<ShardRef>* candShards, TensorResult& r) {
    if (structural(ctx, refShards, candShards, r)) {
        return;
    }
    r.status = Status::Missing;
    r.invalid = invalidReason(refShards, candShards);
    r.findings.push_back(makeWarning(DiagnosticCode::MissingTensor, "tensor " + r.id.path(),
                                     std::string("only the ") +
                                         (refShards ? "reference" : "candidate") + " holds it"));
}

// Two rebuilt tensors of one shape: tolerance, metrics, ratio, verdict and histogram.
void judge(const ComparisonContext& ctx, const FullTensor& ref, const FullTensor& cand,
           TensorResult& r) {
    r.tolerance = toleranceFor(ctx, r.id, ref.dtype, measureFloor(ctx, r.id, ref, r.findings));
    noteUnstableFloor(r);
    r.metrics = computeMetrics(ref, cand);
    // Optimizer-step tensors: per-element tolerances where the update is ill-conditioned.
    r.ratio = toleranceRatio(conditionedError(ctx, ref, cand, r), r.tolerance.value);
    r.ratio = std::max(r.ratio, replicaRatio(r, cand));
    // Over a bound that is not a sound one: reported with its ratio and counted apart
    // (summary.provisionalOverBound), never a confident divergence.
    r.status = tensorVerdict(r.ratio, r.tolerance);
    if (r.status == Status::Divergent) {
        diagnose(ctx, ref, cand, r);
    }
    r.histogram = computeErrorHistogram(ref, cand, r.tolerance.value);
}

} // namespace

TensorResult compareTensor(const ComparisonContext& ctx, const TensorId& id, bool tryClean) {
    TensorResult r;
    r.id = id;
    const auto* refShards = ctx.reference.shards(id);
    const auto* candShards = ctx.candidate.shards(id);
    describeTensor(r, candShards ? *candShards : *refShards);
    if (!refShards || !candShards) {
        oneSided(ctx, refShards, candShards, r);
        return r;
    }
    auto chosen = settlePlacement(ctx, *refShards, *candShards, r);
    if (r.status == Status::Unresolved) {
        return r;
    }
    if (!chosen && tryClean && !hasOptimizerConditioning(ctx, id) && compareClean(ctx, id, r)) {
        return r;
    }
    auto ref = mergeTensor(ctx.reference, id);
    // A placement the evidence settled (the reference's shape leaves it alone) is known; only
    // an inferred one nothing settled is no verdict when its copies differ.
    const bool settled = chosen.has_value();
    auto cand = chosen ? std::move(*chosen) : mergeTensor(ctx.candidate, id);
    if (!settled && inferredCopiesDiffer(cand, r)) {
        return r;
    }
    appendFindings(r.findings, std::move(ref.findings), "reference");
    appendFindings(r.findings, std::move(cand.findings), "candidate");
    if (ref.tensor && cand.tensor && reshaped(ctx, ref.tensor->shape, cand.tensor->shape, r)) {
        return r;
    }
    if (!ref.tensor || !cand.tensor || ref.tensor->shape != cand.tensor->shape) {
        r.status = Status::Invalid;
        r.invalid = invalidReason(refShards, candShards);
    }
    if (!ref.tensor || !cand.tensor) {
        return r;
    }
    if (ref.tensor->shape != cand.tensor->shape) {
        r.findings.push_back(makeError(DiagnosticCode::ShapeMismatch, "tensor " + id.path(),
                                       "reference shape " + shapeToString(ref.tensor->shape) +
                                           " vs candidate shape " +
                                           shapeToString(cand.tensor->shape)));
        return r;
    }
    judge(ctx, *ref.tensor, *cand.tensor, r);
    return r;
}

} // namespace ttrace
