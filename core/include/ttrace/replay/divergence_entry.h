#pragma once
// Where a divergence enters when no module introduces it. A phase's consumed tensors (forward
// inputs, output gradients) are produced by a module of the same phase, except at the phase's
// root: the forward input the job feeds the first module (its data) and the output gradient
// the schedule feeds the last one (the loss's, with the schedule's loss scaling). When every
// replayed module agrees given the reference's inputs, the divergence came in there.
#include "ttrace/compare/diff_result.h"
#include "ttrace/replay/localize_result.h"

#include <optional>

namespace ttrace::replay {

// The divergent consumed tensor at the root of `r.start`'s phase (forward: the forward input
// of the earliest module; backward: the output gradient of the latest), when the walk judged
// every suspect inherited and found nothing introduced; nothing otherwise.
std::optional<TensorId> divergenceEntry(const DiffResult& diff, const LocalizeResult& r);

} // namespace ttrace::replay
