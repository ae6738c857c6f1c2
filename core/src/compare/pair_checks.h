#pragma once
// Plausibility of a reference/candidate pair before any tensor is compared: the same bundle
// given twice, a candidate given as the reference, swapped roles, or the reference of another
// model would otherwise be compared without a word.
#include "ttrace/bundle.h"
#include "ttrace/diagnostic.h"

namespace ttrace {

// Errors with the codes "same-bundle", "swapped-roles", "role-mismatch" and "different-model".
Diagnostics checkBundlePair(const Bundle& reference, const Bundle& candidate);

} // namespace ttrace
