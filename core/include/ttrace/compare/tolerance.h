#pragma once
// Round-off tolerances, derived in docs/tolerance.md: an analytic bound k * C^d * eps and an
// empirical one from the reference's perturbed variants, combined by a documented rule and
// overridable by the user.
#include "ttrace/io/dtype.h"
#include "ttrace/io/name_table.h"
#include "ttrace/io/tensor_id.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace {

struct ToleranceOverride {
    std::string modulePattern = "*"; // glob on the canonical module name
    std::optional<TensorKind> kind;  // all kinds when empty
    double value = 0.0;              // the relative tolerance to use
};

struct ToleranceSettings {
    double k = 4.0;                           // analytic constant
    double c = 1.03;                          // per-layer growth
    double safetyFactor = 0.0;                // empirical multiplier; 0 = documented default
    double floor = 0.0;                       // never tolerate less than this (0 = none)
    std::optional<double> global;             // --tolerance VALUE: replaces derived tolerances
    std::vector<ToleranceOverride> overrides; // later entries win
    // Widen optimizer-step tolerances where the update is ill-conditioned (adam_conditioning.h).
    bool optimizerConditioning = true;
};

// Why a tensor's verdict rests on an analytic bound that is not a sound one (the reference has
// no perturbed variants of it): its ratio is reported, but it is judged neither clean nor
// divergent with confidence (docs/tolerance.md, "Where the analytic bound is provisional").
enum class Provisional {
    None,          // empirical, exact, user-set, or a sound analytic bound
    OptimizerStep, // written by the optimizer step: an adaptive update (Adam's division by
                   // sqrt(v)) amplifies round-off without bound where the gradient is ~0
    CarriedState,  // a later step: computed from parameters that carry an optimizer step's
                   // difference, which no bound the bundle allows can limit
};
std::string_view provisionalName(Provisional reason);
std::optional<Provisional> parseProvisional(std::string_view name);

// Where a tolerance came from (docs/diff-json.md, `tolerance_detail.source`); None ("") for a
// tensor that never got one (invalid input).
enum class ToleranceSource : std::uint8_t { None, Analytic, Empirical, Override, Exact };
inline constexpr NameTable kToleranceSourceNames{
    ToleranceSource::Exact, std::array<std::pair<ToleranceSource, std::string_view>, 5>{{
                                {ToleranceSource::None, ""},
                                {ToleranceSource::Analytic, "analytic"},
                                {ToleranceSource::Empirical, "empirical"},
                                {ToleranceSource::Override, "override"},
                                {ToleranceSource::Exact, "exact"},
                            }}};
using ToleranceSourceValue = NamedValue<ToleranceSource, kToleranceSourceNames>;

struct Tolerance {
    double value = 0.0;              // what the verdict uses
    double analytic = 0.0;           // k * C^d * eps
    std::optional<double> empirical; // safety * (floor mean + spread), if perturbed variants exist
    double floorMean = 0.0;          // mean perturbation-induced relative error
    double floorSpread = 0.0;        // its standard deviation over variants
    int depth = 0;                   // the d used
    double eps = 0.0;                // eps of the accumulating dtype
    ToleranceSourceValue source = ToleranceSource::None; // where `value` came from
    int perturbedSamples = 0; // perturbed variants the floor was measured on
    double carriedMean = 0.0; // part of floorMean carried over from the previous step
    // The analytic bound's path (reduction_paths.h): summed reduction lengths and storage
    // roundings; 0 when the bound had no path (the one-layer form k * C^d * eps stands).
    double reductionLength = 0.0;
    double storageRoundings = 0.0;
    Provisional provisional = Provisional::None;
    // A later step without variants: the measured relative errors of the parameters on the
    // path, added to the value (compare/carried_state.h).
    double carriedParameterError = 0.0;
    // With perturbed variants: the round-off of re-ordering the tensor's own reduction over rows
    // (reductionOrderTolerance), which the variants do not measure; added to the empirical bound
    // in quadrature. 0 where the tensor has no such reduction.
    double reductionOrder = 0.0;
    double ownReductionLength = 0.0; // the n it was derived from
    // The perturbed variants' own disagreement: the largest per-variant floor over the smallest
    // (floorDisagreement); 0 with fewer than two samples. Above kUnstableFloorFactor the floor
    // rests on samples too few for its spread, and a ratio up to this factor is provisional.
    double floorMin = 0.0, floorMax = 0.0;
    double floorDisagreement = 0.0;
};

// Constants of docs/tolerance.md (each is justified there).
inline constexpr double kDefaultSafetyFactor = 4.0; // empirical multiplier
inline constexpr double kSpreadSigmas = 2.0;        // floor = mean + kSpreadSigmas * std
inline constexpr double kMinEpsMultiple = 2.0;      // empirical never below this many eps
// Analytic bound along a reduction path: kAnalyticSigmas standard deviations of the difference
// of two independent round-off errors (sqrt(2) times one run's).
inline constexpr double kAnalyticSigmas = 4.0;
// A floor whose perturbed variants disagree by more than this factor (largest over smallest
// per-variant error) is unstable: the tensor amplifies round-off chaotically (a near-tie, an
// ill-conditioned step) and the few samples drawn do not say how large its floor is. Two
// samples of a well-conditioned tensor differ by well under 10x (docs/tolerance.md, "Variants
// that disagree").
inline constexpr double kUnstableFloorFactor = 100.0;

// Machine epsilon of the dtype that *accumulates* under a manifest precision recipe: fp32 ->
// float32, bf16 and bf16-autocast -> bfloat16, fp16 -> float16, fp8 -> bfloat16 (FP8 recipes
// accumulate in BF16 or wider; the paper uses the BF16 eps). An empty or unknown recipe falls
// back to the eps of `storage` (float32 for non-floating types).
double accumulationEpsilon(std::string_view precision, DType storage);

// Number of layers round-off has passed through: the module depth for forward activations;
// (maxDepth - depth + 1) from the loss for gradients and for everything the optimizer derives
// from gradients (parameters, optimizer state).
int roundoffDepth(TensorKind kind, int moduleDepth, int maxDepth);

// k * C^depth * eps: the one-layer form, used where no reduction path is known (replays).
double analyticTolerance(double k, double c, int depth, double eps);

// Unit round-off (eps / 2) of the dtype that accumulates inside reductions under a precision
// recipe: GEMMs and torch's reductions of 16-bit and FP8 inputs accumulate in float32, so
// every recipe but float64 storage accumulates with float32's.
double reductionRoundoff(DType storage);

// kAnalyticSigmas * sqrt(2) * sqrt(u_acc^2 * reductions + u_store^2 * roundings): the rms
// relative round-off of one run along the path, independent between the two runs
// (docs/tolerance.md, "Analytic bound").
double pathTolerance(double reductions, double roundings, double uAccumulate, double uStore);

// kAnalyticSigmas * sqrt(2) * sqrt(u_acc^2 * n + u_store^2 * partials): the rms relative
// round-off of one reduction of `n` terms summed in another order, plus the rounding of each of
// `partials` partial sums to the storage dtype, independent between the two runs. A perturbed
// variant moves the reduction's terms by about eps and so measures eps * sqrt(n) of change at
// most, while re-ordering commits u * sqrt(n) * (the partial sums' size): for a reduction over
// thousands of rows the latter is the larger (docs/tolerance.md, "Long reductions").
double reductionOrderTolerance(double n, double partials, double uAccumulate, double uStore);

// Noise floor from the relative errors of the perturbed reference variants vs nominal.
struct NoiseFloor {
    double mean = 0.0;
    double spread = 0.0; // sample standard deviation (0 with a single sample)
    int samples = 0;
    double minSample = 0.0, maxSample = 0.0; // the smallest and largest per-variant error
};
// How many times the largest per-variant error exceeds the smallest, the smallest counted as at
// least one `eps` (a variant whose perturbation rounded away entirely says its floor is below an
// ulp, not zero); 0 with fewer than two samples or a non-finite one.
double floorDisagreement(const NoiseFloor& floor, double eps);
// Whether a tolerance's floor is unstable (floorDisagreement > kUnstableFloorFactor) and decided
// the tolerance (source empirical).
bool unstableFloor(const Tolerance& tolerance);
NoiseFloor noiseFloor(std::span<const double> perturbedErrors);

// Training state (parameters, optimizer state) carries round-off from one step to the next,
// but a perturbed variant may re-run each step from the nominal state and then measures only
// the step's own round-off. So the floor of a state tensor also includes the effective floor
// of the same state after the previous step: `parameter` at step i *is* `param_after_step` of
// step i-1 (max of the two floors); `param_after_step` and `optimizer_state` add the previous
// step's floor in quadrature (independent errors). Other kinds are returned unchanged.
NoiseFloor carryFloor(TensorKind kind, const NoiseFloor& own, const NoiseFloor& carried);
// The state tensor whose previous-step floor `kind` inherits: param_after_step for parameter
// and param_after_step, optimizer_state for optimizer_state; nothing for other kinds.
std::optional<TensorKind> carriedStateKind(TensorKind kind);

// max(safety * (mean + kSpreadSigmas * spread), kMinEpsMultiple * eps).
double empiricalTolerance(double safetyFactor, const NoiseFloor& floor, double eps);

// Everything the tolerance of one tensor depends on.
struct ToleranceInput {
    std::string module;
    TensorKind kind = TensorKind::ForwardOutput;
    DType dtype = DType::Float32;
    int moduleDepth = 0;
    int maxDepth = 0;
    std::string precision;             // manifest recipe of the reference
    std::optional<NoiseFloor> floor;   // absent without perturbed variants
    std::optional<NoiseFloor> carried; // previous step's effective floor of this state
    // Without a floor: the reduction path the analytic bound is derived from (nothing: the
    // one-layer form k * C^d * eps) and whether that bound is only provisional.
    std::optional<double> pathReductions;
    double pathRoundings = 0.0;
    // The tensor's own reduction over rows and its rounded partial sums (ReductionPath): with a
    // floor, its re-ordering round-off is added to the empirical bound.
    double ownReductions = 0.0;
    double ownPartials = 0.0;
    Provisional provisional = Provisional::None;
};

// The combining rule: exact for integer tensors; else the user override (last matching) or the
// global --tolerance; else empirical when a floor exists, analytic otherwise; then the user
// floor. Fills every diagnostic field of Tolerance so front ends can explain the number.
Tolerance deriveTolerance(const ToleranceSettings& settings, const ToleranceInput& input);

// Shell-style glob: `*` any run (also across dots), `?` one character.
bool globMatch(std::string_view pattern, std::string_view text);

// Parses "PATTERN[:KIND]=VALUE" (e.g. "layers.*.mlp:param_grad=1e-3"). On failure returns
// nothing and says why in `error`.
std::optional<ToleranceOverride> parseToleranceOverride(std::string_view spec, std::string& error);

} // namespace ttrace
