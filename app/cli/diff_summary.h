#pragma once
// The terminal summary of `ttrace diff`: first divergence, error shape, verdict, worst
// offenders, invalid tensors with their reasons.
#include "ttrace/compare/diff_result.h"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace ttrace::cli {

void printDiffSummary(std::ostream& out, const DiffResult& result, std::size_t worstRows);
// "rank 1" / "ranks 0, 1".
std::string describeRanks(const std::vector<int>& ranks);

} // namespace ttrace::cli
