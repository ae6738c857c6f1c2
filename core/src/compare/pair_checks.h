#pragma once
// Plausibility of a reference/candidate pair before any tensor is compared: the same bundle
// given twice, a candidate given as the reference, swapped roles, or the reference of another
// model would otherwise be compared without a word.
#include "ttrace/io/bundle.h"
#include "ttrace/io/diagnostic.h"

namespace ttrace {

struct PairCheck {
    // Errors with the codes "same-bundle", "swapped-roles", "role-mismatch" and
    // "different-model"; the warnings "reference-is-candidate" when a candidate capture serves
    // as the reference by the user's choice (its verdicts rest on the analytic bound) and
    // "start-differs" (the runs resumed from different checkpoints, or only one from a
    // checkpoint).
    Diagnostics problems;
    // False when no analysis of the pair may be shown: the same bundle twice, the roles
    // swapped or a candidate as the reference, no tensor in common. A parameter whose shape
    // differs is an error but the rest is still compared (it may be the bug).
    bool comparable = true;
};

// What the two manifests settle alone (the same folder, the same rank files, the roles):
// checked before any rank file is read, so a refused pair is never opened, hashed for the
// cache or compared.
PairCheck checkManifestPair(const Manifest& reference, const Manifest& candidate,
                            const std::filesystem::path& referenceDir,
                            const std::filesystem::path& candidateDir, bool referenceIsCandidate);

// checkManifestPair, then what needs the opened bundles (the model's parameters' shapes).
PairCheck checkBundlePair(const Bundle& reference, const Bundle& candidate,
                          bool referenceIsCandidate = false);

} // namespace ttrace
