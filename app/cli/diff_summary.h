#pragma once
// The terminal summary of `ttrace diff`: verdict, first divergence, worst offenders.
#include "ttrace/diff_result.h"

#include <cstddef>
#include <ostream>

namespace ttrace::cli {

void printDiffSummary(std::ostream& out, const DiffResult& result, std::size_t worstRows);

} // namespace ttrace::cli
