#pragma once
// The run's timeline: every flagged tensor ordered by (iteration, phase, micro-batch, execution
// order within the phase), and the first divergence on it. Private to core.
#include "ttrace/compare/diff_result.h"

namespace ttrace {

// Fills result.timeline and result.firstDivergence (plus the per-kind first forward/backward
// divergences). Modules and tensors must already be assembled.
void buildTimeline(DiffResult& result);

bool isDescendantModule(const std::string& child, const std::string& parent);

} // namespace ttrace
