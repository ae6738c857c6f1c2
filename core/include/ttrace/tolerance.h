#pragma once
// Round-off tolerances, derived in docs/tolerance.md: an analytic bound k * C^d * eps and an
// empirical one from the reference's perturbed variants, combined by a documented rule and
// overridable by the user.
#include "ttrace/dtype.h"
#include "ttrace/tensor_id.h"

#include <optional>
#include <string>
#include <vector>

namespace ttrace {

struct ToleranceOverride {
    std::string modulePattern = "*"; // glob on the canonical module name
    std::optional<TensorKind> kind;  // all kinds when empty
    double value = 0.0;              // the relative tolerance to use
};

struct ToleranceSettings {
    double k = 4.0;              // analytic constant
    double c = 1.03;             // per-layer growth
    double safetyFactor = 0.0;   // empirical multiplier; 0 = documented default
    double floor = 0.0;          // never tolerate less than this (0 = none)
    std::optional<double> global; // --tolerance VALUE: replaces derived tolerances
    std::vector<ToleranceOverride> overrides; // later entries win
};

struct Tolerance {
    double value = 0.0;              // what the verdict uses
    double analytic = 0.0;           // k * C^d * eps
    std::optional<double> empirical; // safety * (floor mean + spread), if perturbed variants exist
    double floorMean = 0.0;          // mean perturbation-induced relative error
    double floorSpread = 0.0;        // its standard deviation over variants
    int depth = 0;                   // the d used
    double eps = 0.0;                // eps of the accumulating dtype
    std::string source;              // "analytic", "empirical", "override", "exact"
};

} // namespace ttrace
