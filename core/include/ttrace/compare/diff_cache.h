#pragma once
// Summary cache of diffs, so comparing the same pair of bundles again costs one read of their
// bytes instead of a diff. Where it lives: $XDG_CACHE_HOME/ttrace (else ~/.cache/ttrace), never
// inside a bundle. What keys it: the engine version, the options, both bundles' directories and
// the name, size and CRC-32 of the bytes of every file a diff reads (manifest.json and each
// rank file), computed by reading them, never from names or times: a file changed in place with
// its size and mtime restored misses the cache. The key is checked before any cached answer is
// given as final, by every front end (docs/diff-json.md, "Summary cache"); cache_fingerprint.h
// finds an entry to show provisionally before that check, never instead of it.
#include "ttrace/compare/diff_engine.h"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

// Bumped whenever the engine computes anything differently, so old entries are never reused.
// 10: a long reduction's re-ordering round-off in the empirical bound, floors whose variants
// disagree; 9: environment differences that cannot change a kernel (thread counts) warn no
// more; 8: drift across versions and kernels (drift.h) and the environment lines;
// 7: replicas that disagree named by their own error, also when the merged copy agrees;
// 6: structural divergences and placement sources; 4: optimizer-step conditioning; 3: keyed
// by content; 2: timeline phases, ...
inline constexpr int kDiffCacheVersion = 10;
// Entries kept per cache directory (the newest by modification time). Each entry is a few
// hundred KiB of JSON; the user cache directory is shared by every bundle ever opened, so it
// must not grow without bound.
inline constexpr std::size_t kMaxCachedDiffs = 32;

// Reads every byte of both bundles' files (in parallel); empty when a file cannot be read, which
// makes the pair uncacheable.
[[nodiscard]] std::string diffCacheKey(const std::filesystem::path& reference,
                                       const std::filesystem::path& candidate,
                                       const DiffOptions& options);
// The same, reporting the fraction of bytes read as each file is done; a progress that returns
// false stops it (files not started are skipped) and the key comes back empty.
[[nodiscard]] std::string diffCacheKey(const std::filesystem::path& reference,
                                       const std::filesystem::path& candidate,
                                       const DiffOptions& options, const ProgressFn& progress);
// The part of the key that comes from the options (tolerance, overrides, step selection).
[[nodiscard]] std::string diffOptionsKey(const DiffOptions& options);

// The per-user cache directory, $XDG_CACHE_HOME/ttrace (or ~/.cache/ttrace); none when neither
// variable is set.
[[nodiscard]] std::vector<std::filesystem::path> diffCacheDirs();
[[nodiscard]] std::filesystem::path diffCacheFile(const std::filesystem::path& dir,
                                                  const std::string& key);

// The cached result for `key`, if an entry matches it exactly (nothing for an empty key).
std::optional<DiffResult> loadCachedDiff(const std::string& key);
// Removes all but the `keep` newest diff entries of `dir`.
void pruneDiffCache(const std::filesystem::path& dir, std::size_t keep);
// Stores a result atomically (temporary file, fsync, rename) and prunes the directory to
// kMaxCachedDiffs entries; returns the file, or empty on failure (a cache that cannot be
// written is not an error).
std::filesystem::path storeCachedDiff(const std::string& key, const DiffResult& result);

} // namespace ttrace
