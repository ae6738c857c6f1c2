#pragma once
// The candidate's placement slices (one per rank and box or flat range) with the values that
// rank holds for them, for the shape diagnosis. Private to core.
#include "ttrace/merge/merge.h"

#include <cstdint>
#include <vector>

namespace ttrace {

struct ErrorSlice {
    int rank = 0;
    bool partial = false; // a `sum` partial: its own values mean nothing alone
    std::int64_t firstGlobal = 0;
    std::vector<std::int64_t> global; // global flat indices it covers, in local order
    std::vector<double> own;          // the rank's own values for them (merged ones for sums)
};

std::vector<ErrorSlice> errorSlices(const FullTensor& candidate);

// ||a - b|| / ||b|| (||a - b|| when ||b|| == 0).
double relDiff(const std::vector<double>& a, const std::vector<double>& b);
// The reference's values at `indices`.
std::vector<double> gather(const std::vector<double>& values,
                           const std::vector<std::int64_t>& indices);

} // namespace ttrace
