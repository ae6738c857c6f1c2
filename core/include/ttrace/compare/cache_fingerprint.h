#pragma once
// A way back to a cached comparison without reading the bundles: a fingerprint of the pair from
// what the file system says about its files (name, size, device, inode, modification and
// change times of manifest.json and every rank file, and the options), and a small pointer file
// in the cache directory, `seen-<hash>.json`, from that fingerprint to the content key of the
// entry last stored or verified for it.
//
// The fingerprint never vouches for an entry. A file can change with its stamps unchanged
// (a coarse-timestamp or network file system, a write through a mapping, a tool that
// preserves times); only the content key (diff_cache.h: the CRC-32 of every byte) says the
// entry is the answer for these bytes. A front end may show what the fingerprint finds at
// once, as provisional, and must then compute the content key and drop the provisional answer
// if the keys differ.
#include "ttrace/compare/diff_engine.h"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace ttrace {

// Pointer files kept per cache directory (the newest by modification time).
inline constexpr std::size_t kMaxSeenFingerprints = 64;

// Stat calls only, no file is read; empty when a bundle directory cannot be listed or one of
// its files is not a regular file.
[[nodiscard]] std::string diffCacheFingerprint(const std::filesystem::path& reference,
                                               const std::filesystem::path& candidate,
                                               const DiffOptions& options);

// Points `fingerprint` at the cached entry stored under `contentKey` (nothing for empty
// inputs; a pointer that cannot be written is not an error).
void rememberFingerprint(const std::string& fingerprint, const std::string& contentKey);

// What the fingerprint last pointed at: UNVERIFIED until the caller's own diffCacheKey of the
// pair equals `contentKey`.
struct SeenDiff {
    std::string contentKey;
    DiffResult result;
};
[[nodiscard]] std::optional<SeenDiff> loadSeenDiff(const std::string& fingerprint);

} // namespace ttrace
