#pragma once
// The global gradient norm and clip coefficient of each clipped step (the manifest's
// "gradient_clipping", docs/bundle-format.md), and what the comparison read from them
// (docs/tolerance.md, "Gradient clipping").
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ttrace {

struct ClipStep {
    std::int64_t iteration = 0;
    std::string variant = "nominal";
    double totalNorm = 0.0;   // the norm the framework computed, reduced over the job
    double maxNorm = 0.0;     // the clipping threshold
    double coefficient = 1.0; // min(maxNorm / (totalNorm + 1e-6), 1): what gradients were scaled by
    std::string source;       // the function that applied it
};

// One clipped step of a diff whose candidate's coefficient differs from the reference's.
struct ClipComparison {
    std::int64_t iteration = 0;
    double referenceNorm = 0.0, candidateNorm = 0.0;
    double factor = 1.0; // candidate coefficient / reference coefficient
    // How far each side's norm is from the norm of its own clipped main gradients (relative):
    // the framework's own round-off of the norm, or a norm that misses some gradients.
    double referenceNormError = 0.0, candidateNormError = 0.0;
    bool consistent = false; // the candidate's norm is its gradients' norm within round-off
    // Divergent tensors of the step the factor explains: judged after it ("moved by the clip
    // coefficient") when consistent; else left divergent, attributed to the clipping.
    std::size_t moved = 0;
    [[nodiscard]] std::string toString() const; // one sentence for every front end
};

} // namespace ttrace
