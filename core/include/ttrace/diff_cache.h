#pragma once
// Summary cache of diffs, so opening the same pair of bundles again is instant. The key covers
// the name, size and modification time of both bundles' manifest and rank files, the diff
// options and the engine version: any change to a file or an option misses the cache.
#include "ttrace/diff_engine.h"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

// Bumped whenever the engine computes anything differently, so old entries are never reused.
inline constexpr int kDiffCacheVersion = 2; // 2: timeline phases, shape diagnosis, margin rule
// Entries kept per cache directory (the newest by modification time). Each entry is a few
// hundred KiB of JSON; the user cache directory is shared by every bundle ever opened, so it
// must not grow without bound.
inline constexpr std::size_t kMaxCachedDiffs = 32;

[[nodiscard]] std::string diffCacheKey(const std::filesystem::path& reference,
                                       const std::filesystem::path& candidate,
                                       const DiffOptions& options);

// Places searched, in order: <candidate>/.ttrace-cache, then $XDG_CACHE_HOME/ttrace (or
// ~/.cache/ttrace) for read-only bundles.
[[nodiscard]] std::vector<std::filesystem::path>
diffCacheDirs(const std::filesystem::path& candidate);
[[nodiscard]] std::filesystem::path diffCacheFile(const std::filesystem::path& dir,
                                                  const std::string& key);

// The cached result for `key`, if any entry matches it exactly.
std::optional<DiffResult> loadCachedDiff(const std::filesystem::path& candidate,
                                         const std::string& key);
// Stores a result in the first writable cache dir and prunes that dir to kMaxCachedDiffs
// entries; returns the file, or empty on failure (a cache that cannot be written is not an
// error).
// Removes all but the `keep` newest diff entries of `dir`.
void pruneDiffCache(const std::filesystem::path& dir, std::size_t keep);
std::filesystem::path storeCachedDiff(const std::filesystem::path& candidate,
                                      const std::string& key, const DiffResult& result);

} // namespace ttrace
