#pragma once
// Reading a shard's bytes straight from the rank file (pread) when the index recorded where
// they lie: contiguous, unfiltered data in the host's layout (ShardRef::fileOffset). Then the
// tool's process never lets libhdf5 parse an untrusted file's metadata; chunked or compressed
// datasets are still read through libhdf5, and only after the ttrace-index child indexed the
// file without trouble.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace ttrace {

// Reads exactly `out.size()` bytes at `offset` of `file`. Throws BundleError naming the file
// when it cannot be opened, is no longer a regular file, or has become too short.
void readRankFileBytes(const std::filesystem::path& file, std::int64_t offset,
                       std::span<std::byte> out);

} // namespace ttrace
