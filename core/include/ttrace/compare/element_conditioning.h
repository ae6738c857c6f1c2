#pragma once
// What the optimizer-step conditioning did to one tensor's verdict, and the elements that drive
// its ratio (docs/tolerance.md, "Optimizer-step conditioning"; docs/diff-json.md).
#include <cstdint>
#include <vector>

namespace ttrace {

// The conditioning term of one element: how far a round-off change of the gradient can move the
// element's updated value.
struct ConditioningTerm {
    std::int64_t index = 0; // flat (row-major) index
    double term = 0.0;      // absolute
};

// One element's part in the verdict: its error, its tolerance hypot(base, conditioning) with
// base = tolerance * rms(reference), and its conditioning term (all absolute).
struct ElementDetail {
    std::int64_t index = 0; // flat (row-major) index
    double error = 0.0;
    double tolerance = 0.0;
    double conditioning = 0.0;
};

struct ElementConditioning {
    // Relative size of the terms, sqrt(sum term^2) / ||ref||: the most the tensor's tolerance
    // widens (only where the terms sit).
    double relative = 0.0;
    std::int64_t illConditioned = 0; // elements whose update is ill-conditioned
    // ||e / (t / base)|| / ||ref||: the error the ratio uses; the plain error without terms.
    double conditionedError = 0.0;
    std::vector<ElementDetail> topElements; // up to 3, largest part of the ratio first
    // Every term, by index: what the next step's state inherits (not part of the JSON).
    std::vector<ConditioningTerm> terms;
};

} // namespace ttrace
