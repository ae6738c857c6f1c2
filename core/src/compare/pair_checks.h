#pragma once
// Plausibility of a reference/candidate pair before any tensor is compared: the same bundle
// given twice, a candidate given as the reference, swapped roles, or the reference of another
// model would otherwise be compared without a word.
#include "ttrace/bundle.h"
#include "ttrace/diagnostic.h"

namespace ttrace {

struct PairCheck {
    // Errors with the codes "same-bundle", "swapped-roles", "role-mismatch" and
    // "different-model"; the warning "start-differs" (the runs resumed from different
    // checkpoints, or only one from a checkpoint).
    Diagnostics problems;
    // False when no analysis of the pair may be shown: the same bundle twice, the roles
    // swapped or a candidate as the reference, no tensor in common. A parameter whose shape
    // differs is an error but the rest is still compared (it may be the bug).
    bool comparable = true;
};

PairCheck checkBundlePair(const Bundle& reference, const Bundle& candidate);

} // namespace ttrace
