#pragma once
// The steps from two directories to an opened pair, one by one, for the diff session
// (ttrace/session/diff_session.h) and the public parts (ttrace/compare/diff_parts.h) to compose:
// each step takes what an earlier one read (the manifests are read once per diff).
#include "ttrace/compare/diff_parts.h"
#include "ttrace/io/manifest.h"

#include <filesystem>
#include <optional>

namespace ttrace {

// Both manifests as read before any rank file (nothing for one that cannot be read: the open
// reports why).
struct PairManifests {
    std::optional<Manifest> reference, candidate;
};
PairManifests readPairManifests(const std::filesystem::path& reference,
                                const std::filesystem::path& candidate);

// The result of a diff that ends before any tensor is compared.
DiffResult earlyResult(const std::filesystem::path& reference,
                       const std::filesystem::path& candidate, Diagnostics diagnostics,
                       bool cancelled);

// A pair the manifests alone refuse (checkManifestPair): refused before any rank file is read,
// hashed for the cache or compared. Nothing when a manifest could not be read (the open
// reports it) or the pair is not refused.
std::optional<DiffResult> manifestRefusal(const PairManifests& manifests,
                                          const std::filesystem::path& reference,
                                          const std::filesystem::path& candidate,
                                          const DiffOptions& options);

// The summary cache's entry for the pair's content key, or nothing on a miss (or when `progress`
// cancels). A hit is remembered under the pair's file stamps, so the next session may show it
// as provisional before its own check.
std::optional<DiffResult> contentCached(const std::filesystem::path& reference,
                                        const std::filesystem::path& candidate,
                                        const DiffOptions& options, const ProgressFn& progress);

// A cached result handed to the front end as a fresh one would be: tensor by tensor.
void replayCached(const DiffResult& cached, const ProgressFn& progress,
                  const TensorResultFn& onTensor);

// openDiffPair for a pair whose manifests were already checked (manifestRefusal).
OpenedPair openCheckedPair(const std::filesystem::path& reference,
                           const std::filesystem::path& candidate, const DiffOptions& options,
                           const DiffCallbacks& callbacks);

} // namespace ttrace
