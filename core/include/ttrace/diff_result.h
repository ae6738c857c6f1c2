#pragma once
// Immutable results of comparing a candidate bundle with its reference. Front ends adapt these
// (tree models, reports); they never recompute.
#include "ttrace/diagnostic.h"
#include "ttrace/histogram.h"
#include "ttrace/metrics.h"
#include "ttrace/placement.h"
#include "ttrace/tensor_id.h"
#include "ttrace/tolerance.h"

#include <optional>
#include <string>
#include <vector>

namespace ttrace {

enum class Status {
    Clean,     // ratio <= 1: round-off
    Divergent, // ratio > 1: bug
    Missing,   // in one bundle only
    Invalid,   // shards could not be merged (hole, mismatch, ...)
};
std::string_view statusName(Status status);

struct TensorResult {
    TensorId id; // variant "nominal"
    Shape shape;
    DType dtype = DType::Float32;
    std::string placement; // human-readable candidate placement
    TensorMetrics metrics;
    Tolerance tolerance;
    double ratio = 0.0; // metrics.relError / tolerance.value
    Status status = Status::Clean;
    ErrorHistogram histogram;
    Diagnostics findings; // merge findings (replica disagreement, holes) for this tensor
};

enum class Origin { None, Introduced, Inherited };
std::string_view originName(Origin origin);

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
    std::size_t compared = 0, divergent = 0, missing = 0, invalid = 0;
    std::size_t perturbedVariants = 0;
    double maxRatio = 0.0;
    bool clean = true;
};

struct DiffResult {
    DiffSummary summary;
    std::vector<TensorResult> tensors; // sorted by module execution order, then id
    std::vector<ModuleResult> modules; // execution order
    // First divergent module in forward order (activations) and in backward order (gradients).
    std::optional<std::string> firstForwardDivergence;
    std::optional<std::string> firstBackwardDivergence;
    Diagnostics diagnostics; // problems opening/merging bundles
    bool cancelled = false;

    [[nodiscard]] const ModuleResult* module(const std::string& name) const;
};

} // namespace ttrace
