#pragma once
// Which iteration and micro-batch the explorer shows; empty means "worst over all".
#include "ttrace/io/tensor_id.h"

#include <cstdint>
#include <optional>

namespace ttrace::ui {

struct StepFilter {
    std::optional<std::int64_t> iteration;
    std::optional<std::int64_t> microBatch;

    // Once-per-iteration tensors (micro-batch -1: main grads, parameters after the step) match
    // every micro-batch, so choosing a micro-batch never hides them.
    [[nodiscard]] bool matches(const TensorId& id) const {
        if (iteration && id.iteration != *iteration) {
            return false;
        }
        return !microBatch || id.microBatch < 0 || id.microBatch == *microBatch;
    }
    bool operator==(const StepFilter&) const = default;
};

} // namespace ttrace::ui
