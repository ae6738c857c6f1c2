#pragma once
// How a job reduces its gradients over data parallelism (the manifest's "gradient_convention",
// docs/bundle-format.md), and the one finding a whole-run factor gives when capture-side
// gradients and that convention disagree (docs/tolerance.md, "Gradient conventions").
#include <cstddef>
#include <string>

namespace ttrace {

struct GradientConvention {
    std::string reduction;     // "mean", "sum", "divide" (by divideFactor) or "none"
    double divideFactor = 1.0; // what the reduction divides the sum of per-rank gradients by
    bool determined = true;    // read from a declaration, not assumed
    std::string source;        // where it was read, e.g. "fsdp2: set_gradient_divide_factor(1)"
    int microBatches = 1;      // micro-batches accumulated per step
    // "sum, divide factor 1 (fsdp2: set_gradient_divide_factor(1))".
    [[nodiscard]] std::string toString() const;
};

// Every capture-side gradient of the candidate (activation gradients, per-rank parameter
// gradients before the reduction, the per-rank loss) is the reference's times one factor,
// while everything after the reduction agrees: the gradients' convention was taken wrongly,
// and the training is correct. Named once; those gradients are judged after the factor.
struct ConventionMismatch {
    double factor = 1.0;
    std::string factorName;  // "x0.5 (= 1/dp)"
    std::size_t tensors = 0; // gradients judged after the factor
    std::string declared;    // the candidate's recorded convention, or "not recorded"
    [[nodiscard]] std::string toString() const; // one sentence for every front end
};

} // namespace ttrace
