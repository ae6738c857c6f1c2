#pragma once
// Findings that describe a comparison's outcome (drift, what differs between the environments,
// a convention or clipping factor, a structural change): part of the verdict, never a problem
// met while opening the bundles. A comparison given by a cache entry or a report keeps both
// kinds in one list; a front end that lists the opening's problems takes them from here.
#include "ttrace/io/diagnostic.h"

namespace ttrace {

[[nodiscard]] bool isVerdictNote(DiagnosticCode code);
// `diagnostics` without the verdict notes, in their order.
[[nodiscard]] Diagnostics openingProblems(const Diagnostics& diagnostics);

} // namespace ttrace
