#pragma once
// Immutable results of comparing a candidate bundle with its reference. Front ends adapt these
// (tree models, reports); they never recompute.
#include "ttrace/compare/bug_class.h"
#include "ttrace/compare/element_conditioning.h"
#include "ttrace/compare/histogram.h"
#include "ttrace/compare/metrics.h"
#include "ttrace/compare/shape_diagnosis.h"
#include "ttrace/compare/structural_change.h"
#include "ttrace/compare/tolerance.h"
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/gradient_clipping.h"
#include "ttrace/io/gradient_convention.h"
#include "ttrace/io/placement.h"
#include "ttrace/io/tensor_id.h"

#include <optional>
#include <string>
#include <vector>

namespace ttrace {

enum class Status {
    Clean,     // ratio <= 1: round-off
    Divergent, // ratio > 1: bug
    Missing,   // in one bundle only
    Invalid,   // shards could not be merged (hole, mismatch, ...)
    // The candidate's placement was inferred and the evidence (the reference's shape, replicas'
    // byte identity) left more than one possibility, or excluded every one: not compared.
    Unresolved,
    // 1 < ratio <= kDriftBound at a module whose kernel or version differs between the two
    // manifests (or downstream of one, inheriting its error): the rounding of another kernel,
    // not a bug (docs/cross-version.md).
    Drift,
};
std::string_view statusName(Status status);
std::optional<Status> parseStatus(std::string_view name);

// The one severity order of every front end: invalid > missing > unresolved > divergent >
// drift > clean. A tensor
// that cannot be compared outranks a divergence because it makes the other verdicts unreliable
// (a missing partial sum looks like a divergence); the exit code follows the same order.
int severity(Status status);
// Worth a look: anything but clean.
bool isFlagged(Status status);

// Why a tensor could not be compared, with what would fix it.
struct InvalidReason {
    std::string referenceShape, candidateShape; // logical shapes as each side records them
    std::string candidateLayout; // the placement the merge tried, e.g. "copy boxes over 2 ranks"
    std::string layoutNote;      // the capture's note on how it inferred the layout (optional)
    std::string annotateHint;    // the ttrace.capture.annotate(...) line that fixes it (optional)
    [[nodiscard]] bool empty() const {
        return referenceShape.empty() && candidateShape.empty() && candidateLayout.empty();
    }
    // One line: "reference [4, 8] vs candidate [8, 8]; candidate layout tried: ...; ...".
    [[nodiscard]] std::string toString() const;
};

// How the comparison settled an inferred placement (docs/bundle-format.md,
// `placement_alternatives`): which hypothesis it kept, those still possible when it could not
// decide, and why the others were excluded.
struct PlacementResolution {
    std::string hypothesis;                // the capture's own (its label; "" when unnamed)
    std::string chosen;                    // the one compared; "" when unresolved
    std::vector<std::string> alternatives; // still possible (unresolved only)
    std::vector<std::string> excluded;     // "label: why", e.g. "last (sb): rebuilds [4, 32]"
    [[nodiscard]] bool empty() const { return hypothesis.empty() && chosen.empty(); }
    // One line: "placement unresolved: seq (sb) or seq (bs) rebuild the reference's shape ...".
    [[nodiscard]] std::string toString() const;
};

struct TensorResult {
    TensorId id; // variant "nominal"
    Shape shape;
    DType dtype = DType::Float32;
    std::string placement; // human-readable candidate placement
    // Where the candidate's placement came from (the least trusted over its shards).
    PlacementSource placementSource = PlacementSource::Unknown;
    TensorMetrics metrics;
    Tolerance tolerance;
    double ratio = 0.0; // metrics.relError / tolerance.value
    Status status = Status::Clean;
    ErrorHistogram histogram;
    Diagnostics findings;  // merge findings (replica disagreement, holes) for this tensor
    InvalidReason invalid; // for invalid tensors
    // For a placement the capture inferred with alternatives: how the comparison settled it
    // (status Unresolved when it could not).
    PlacementResolution resolution;
    std::vector<ShapeSignature> signatures; // the error's shape, for divergent tensors
    BugClassHint hint;                      // for divergent tensors; may be empty
    // A divergence of structure (status Divergent, ratio +inf, no metrics): the module ran on
    // both sides but this tensor is on one only, or of a shape no layout explains.
    StructuralChange structure = StructuralChange::None;
    // Optimizer-step tensors: the per-element conditioning of the tolerance and the elements
    // that drive the ratio.
    ElementConditioning conditioning;
};

// Undetermined: the output diverges, but what the module consumed (or its own tensors) in that
// step could not be compared (invalid or missing): an invalid input cannot clear or blame it.
// Drift: the module's own kernel or version changed and its divergence is within the drift
// bound (its downstream modules inherit it: Inherited, with tensors of status Drift).
enum class Origin { None, Introduced, Inherited, Undetermined, Drift };
std::string_view originName(Origin origin);
std::optional<Origin> parseOrigin(std::string_view name);

struct ModuleResult {
    std::string name;
    std::string type;
    int order = 0;
    int depth = 0;
    Status status = Status::Clean;
    double maxRatio = 0.0;
    double inputRatio = 0.0;  // worst ratio among forward inputs (or output grads backwards)
    double outputRatio = 0.0; // worst ratio among forward outputs (or input grads backwards)
    Origin origin = Origin::None;
    std::vector<std::size_t> tensors; // indices into DiffResult::tensors
};

struct DiffSummary {
    std::string referenceDir, candidateDir;
    std::string precision;
    int referenceRanks = 0, candidateRanks = 0;
    // Each side's parallel layout (run_layout.h): either side may be distributed.
    std::string referenceLayout, candidateLayout;
    // The reference's own role: "candidate" when a candidate capture serves as the reference
    // (DiffOptions::referenceIsCandidate); it has no perturbed variants, so every verdict
    // rests on the analytic bound.
    std::string referenceRole = "reference";
    std::size_t compared = 0, divergent = 0, missing = 0, invalid = 0;
    std::size_t unresolved = 0; // tensors whose inferred placement the evidence did not settle
    std::size_t structural = 0; // divergent tensors whose structure differs (counted in divergent)
    std::size_t perturbedVariants = 0;
    double maxRatio = 0.0; // over the tensors judged with confidence
    // Compared tensors judged by a provisional analytic bound (Tolerance::provisional), those
    // of them over it, and their largest ratio: neither clean nor divergent with confidence.
    std::size_t provisional = 0, provisionalOverBound = 0;
    double provisionalMaxRatio = 0.0;
    // Compared tensors whose floor rests on perturbed variants that disagree by more than
    // kUnstableFloorFactor (tolerance.h), those of them over their tolerance by no more than that
    // disagreement (judged provisionally, not divergent), and those ones' largest ratio.
    std::size_t unstableFloors = 0, unstableOverBound = 0;
    double unstableMaxRatio = 0.0;
    bool clean = true;
    // Tensors whose divergence is drift (status Drift, counted in compared, not in divergent),
    // their largest ratio, and the bound they were allowed (0 when no drift was allowed).
    std::size_t drift = 0;
    double driftMaxRatio = 0.0;
    double driftBound = 0.0;
    // What differs between the two manifests' environments (environment_diff.h), one line
    // each; empty when they agree or a side recorded none.
    std::vector<std::string> environmentChanges;
    // Whether both sides recorded an environment (older bundles did not).
    bool environmentRecorded = false;
    std::string gradientConvention; // the candidate's recorded convention; "" when not recorded
};

// The first finding on the run's timeline: ordered by (iteration, phase, micro-batch, execution
// order within the phase: forward in module order, backward in reverse), then descended into
// the first divergent submodule of that module.
struct FirstDivergence {
    std::int64_t iteration = 0;
    Phase phase = Phase::Forward;
    std::int64_t microBatch = 0;
    std::string module;
    TensorKind kind = TensorKind::ForwardOutput;
    std::vector<int> ranks;               // candidate ranks whose pieces carry the error
    std::size_t tensor = 0;               // index into DiffResult::tensors
    std::vector<std::string> alsoInPhase; // other modules diverging in the same phase step
};

struct DiffResult {
    DiffSummary summary;
    std::vector<TensorResult> tensors; // sorted by module execution order, then id
    std::vector<ModuleResult> modules; // execution order
    // First divergent module in forward order (activations) and in backward order (gradients).
    std::optional<std::string> firstForwardDivergence;
    std::optional<std::string> firstBackwardDivergence;
    std::optional<FirstDivergence> firstDivergence; // the first on the timeline
    std::vector<std::size_t> timeline;              // flagged tensors (indices) in timeline order
    // The first invalid or missing tensor on the timeline when it comes before the first
    // divergence (or there is none): the divergence headline is the first *comparable* one,
    // and a report must say that something earlier could not be compared, and why.
    std::optional<std::size_t> earlierUncompared;
    Diagnostics diagnostics; // problems opening/merging bundles
    // A whole-run factor on the capture-side gradients, named once (their verdicts are taken
    // after it); see compare/convention_check.h.
    std::optional<ConventionMismatch> convention;
    // Clipped steps whose candidate coefficient differs from the reference's: the factor it
    // moves every main gradient and the step by, and whether the candidate's norm is its own
    // gradients' (see compare/clip_coefficient.h).
    std::vector<ClipComparison> clipping;
    bool cancelled = false;

    [[nodiscard]] const ModuleResult* module(const std::string& name) const;
};

// One sentence on `earlierUncompared` for every front end ("" when there is none), e.g.
// "iter 0 mb 0 layers.0.mlp forward_output is invalid, earlier than the first divergence:
// reference [4, 8] vs candidate [8, 8]; ...".
std::string earlierUncomparedText(const DiffResult& result);

} // namespace ttrace
