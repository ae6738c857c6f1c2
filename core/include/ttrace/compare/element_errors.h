#pragma once
// The elements behind a tensor's error, as a pixel inspector shows pixels: the elements with the
// largest error (where, the reference's and the candidate's value, the error and the element
// tolerance) and the error along one chosen dimension (per head, per token, per hidden unit).
// Both tensors are read through the engine's merge, so a candidate sharded over many ranks is
// inspected as its logical full tensor, exactly as the diff compared it.
#include "ttrace/io/bundle.h"
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/progress.h"
#include "ttrace/io/tensor_id.h"
#include "ttrace/merge/merge.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ttrace {

struct ElementError {
    std::vector<std::int64_t> index; // multi-index into the tensor's shape
    double reference = 0.0;
    double candidate = 0.0;
    double error = 0.0;     // |candidate - reference| (infinite when either is not finite)
    double tolerance = 0.0; // the element tolerance (ElementReport::elementTolerance)
};

// The error of one index along the chosen dimension: every element with that index.
struct SliceError {
    std::int64_t index = 0;
    double relError = 0.0;    // ||cand - ref|| / ||ref|| over the slice (||cand - ref|| if 0)
    double ratio = 0.0;       // relError / the tensor's relative tolerance
    double maxAbsError = 0.0; // worst element of the slice
};

struct ElementReport {
    TensorId id;
    Shape shape;
    // One tolerance unit per element, as the error histogram counts them: the tensor's relative
    // tolerance times the reference's RMS, so a tensor whose every element is off by one unit
    // has a relative error equal to its tolerance.
    double elementTolerance = 0.0;
    std::vector<ElementError> largest; // worst first
    int dimension = -1;                // the dimension of `slices`; -1: none asked
    std::vector<SliceError> slices;    // one per index along `dimension`
    Diagnostics problems;              // a side that could not be read (names the bundle)
    bool cancelled = false;
};

struct ElementQuery {
    TensorId id;            // as the diff names it (TensorResult::id)
    double tolerance = 0.0; // the tensor's relative tolerance (TensorResult::tolerance.value)
    std::size_t top = 20;   // how many of the worst elements
    int dimension = -1;     // the slice dimension; -1 for none
};

// Pure computation on two merged tensors of one shape. `progress` may cancel.
ElementReport elementErrors(const FullTensor& reference, const FullTensor& candidate,
                            const ElementQuery& query, const ProgressFn& progress = {});

// Merges the query's tensor from both bundles (errors name the bundle and tensor), then
// elementErrors. Safe to call from a worker thread.
ElementReport inspectElements(const Bundle& reference, const Bundle& candidate,
                              const ElementQuery& query, const ProgressFn& progress = {});

} // namespace ttrace
