#pragma once
// The parallel layout a bundle was captured in, as one phrase for reports and the explorer's
// header: "single process", "TP2 x DP2, 4 ranks". Both sides of a diff may be distributed
// (a distributed reference), so every front end names both layouts the same way.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/manifest.h"

#include <string>

namespace ttrace {

std::string layoutText(const Manifest& manifest);

// One side of a diff as its report shows it: the layout (the rank count for a report of an
// older build), and for a candidate capture serving as the reference, that it is one.
std::string sideLayoutText(const DiffSummary& summary, bool reference);

// What a reference captured on `ranks` processes cannot show (docs/capture.md, "What a
// distributed reference cannot see"): "" for one process; otherwise that a bug in code both
// layouts share (a TP2 reference and a TP2 x DP2 candidate both run the TP2 code) cannot
// diverge between them. Every front end shows it beside the reference's layout.
std::string distributedReferenceNote(int ranks);

} // namespace ttrace
