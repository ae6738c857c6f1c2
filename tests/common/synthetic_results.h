#pragma once
// Synthetic per-tensor results for the verdict tests: a tensor of a module with a ratio, its
// status as the engine derives it from that ratio.
#include "ttrace/compare/verdict.h"

#include <cstdint>
#include <string>

namespace ttrace::testing {

inline TensorResult syntheticTensor(std::string module, TensorKind kind, double ratio,
                                    std::int64_t iteration = 0) {
    TensorResult t;
    t.id.module = std::move(module);
    t.id.kind = kind;
    t.id.iteration = iteration;
    t.ratio = ratio;
    t.status = verdictFor(ratio);
    return t;
}

} // namespace ttrace::testing
