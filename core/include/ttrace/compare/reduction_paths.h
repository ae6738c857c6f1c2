#pragma once
// The reduction lengths the analytic bound is derived from (docs/tolerance.md, "Analytic bound"),
// read from what the reference bundle holds: each leaf module's parameter shapes (a weight
// [out, in] reduces over `in` forward and over `out` backward; a norm's weight over its
// length), its first input's shape (rows = tokens a weight gradient sums over; a module without
// parameters reduces along its input's dimensions), and the candidate's partial sums.
#include "ttrace/compare/tolerance.h"
#include "ttrace/io/bundle.h"
#include "ttrace/io/tensor_id.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

// What round-off a tensor has passed through on its way from the model's inputs: the summed
// length of every reduction (each accumulates `u_acc * sqrt(n)` of relative error, rms) and the
// number of times a value was rounded to its storage dtype (each `u_store`).
struct ReductionPath {
    double reductions = 0.0; // sum of reduction lengths on the path
    double roundings = 0.0;  // storage roundings on the path (outputs and partial sums)
    // The tensor's own last reduction, where it is over rows (a weight gradient sums over the
    // tokens of every micro-batch): its length and the partial sums of it that are rounded to
    // the storage dtype before they are added (a data-parallel reduction's per-rank parts).
    // Perturbed variants do not measure the round-off of re-ordering it (docs/tolerance.md,
    // "Long reductions").
    double ownReductions = 0.0;
    double ownPartials = 0.0;
};

class ReductionPaths {
public:
    // Leaves (modules without captured submodules) in the reference's execution order; partial
    // sums from the candidate's `sum` placements; micro-batches from the reference manifest.
    static ReductionPaths build(const Bundle& reference, const Bundle& candidate);

    // The path of one tensor; nothing when its module is not in the reference's module table.
    [[nodiscard]] std::optional<ReductionPath> pathOf(const TensorId& id) const;
    // Why the analytic bound of `id` is only provisional: what the optimizer step writes, and
    // everything of a later step (docs/tolerance.md, "Where the analytic bound is provisional").
    [[nodiscard]] Provisional provisionalOf(const TensorId& id) const;
    // The leaves whose parameters `id` is computed from: those run before it (forward), every
    // one (gradients: the loss depends on the whole forward). Empty for an unknown module.
    [[nodiscard]] std::vector<std::string> parameterLeaves(const TensorId& id) const;
    // Names of the parameters the reference holds of `leaf` at its first step.
    [[nodiscard]] const std::vector<std::string>& parametersOf(const std::string& leaf) const;

    struct Leaf {
        std::string name;
        int order = 0;
        double forward = 0.0;                // reduction length of its forward
        double backward = 0.0;               // reduction length of its input gradient
        double tokens = 1.0;                 // rows its weight gradient sums over, per micro-batch
        double roundings = 1.0;              // its output's rounding plus one per partial sum
        std::vector<std::string> parameters; // names of its captured parameters
    };

private:
    // The leaves inside module `name` (itself when it is one), as indices into leaves_.
    [[nodiscard]] std::vector<std::size_t> leavesOf(const std::string& name) const;

    std::vector<Leaf> leaves_; // execution order
    double forwardTotal_ = 0.0, forwardRoundings_ = 0.0;
    double microBatches_ = 1.0;
    std::int64_t firstIteration_ = 0;
    double gradientReducers_ = 1.0; // data-parallel ranks whose gradients are summed
};

} // namespace ttrace
