#pragma once
// What each process saw when it opened the bundles, reduced to a line rank 0 compares with its
// own: every process must split and compare the same tensors, so a process that sees other
// files (another mount, a file still being copied) fails the run by name instead of leaving a
// silently different share in the report.
#include "ttrace/compare/diff_parts.h"

#include <string>
#include <vector>

namespace ttrace::mpi {

// "tensors N ids HASH early 0|1" and one line per opening problem: "CODE LOCATION".
[[nodiscard]] std::string openingFingerprint(const OpenedPair& pair,
                                             const std::vector<TensorId>& ids);

// Empty when every process's fingerprint matches rank 0's; else names the first process that
// differs and the first line where it does.
[[nodiscard]] std::string compareFingerprints(const std::vector<std::string>& byRank);

} // namespace ttrace::mpi
