#pragma once
// Wording shared by the shape signatures: numbers, named factors, rank and index lists.
// Private to core.
#include "ttrace/compare/shape_diagnosis.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ttrace {

// 3 significant digits, e.g. "0.5", "2", "1.25e-05".
std::string formatFactor(double value);
// " (= 1/dp)" when the factor is a parallel size, its inverse or its square root (within 1%;
// every name that fits, " (= tp = micro_batches)"), else "".
std::string nameFactor(double factor, const ParallelSizes& parallel);
// "rank 1" / "ranks 0, 2".
std::string rankList(const std::vector<int>& ranks);
// "[1, 0, 3, 2]" (at most 16 entries, then "...").
std::string indexList(const std::vector<std::int64_t>& indices);

} // namespace ttrace
