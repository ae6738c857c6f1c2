#pragma once
// Where a tensor sits on the run's one timeline (docs/diff-json.md, "The timeline"): its
// iteration and phase. `ttrace diff`'s first divergence, the explorer's headline and the
// localize walk (`ttrace localize`, the explorer's Localize All) all place tensors with this
// one function, so they name the same step.
#include "ttrace/io/tensor_id.h"

#include <compare>
#include <cstdint>

namespace ttrace {

struct TimePlace {
    std::int64_t iteration = 0;
    Phase phase = Phase::Forward;
    auto operator<=>(const TimePlace&) const = default;
};

// A tensor's iteration and the phase of it that produced (or consumed) the tensor. A
// `parameter` of iteration I > 0 is the state the optimizer step of iteration I-1 wrote, so it
// sits at (I-1, optimizer_step), beside that step's param_after_step; a parameter of iteration
// 0 is the initial state, read by the first forward: (0, forward).
TimePlace timePlaceOf(const TensorId& id);

} // namespace ttrace
