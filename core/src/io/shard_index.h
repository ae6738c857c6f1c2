#pragma once
// Indexing of one rank file: root attribute checks and one ShardRef per tensor dataset.
#include "io/shard_from_facts.h"
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/dtype.h"
#include "ttrace/io/manifest.h"
#include "ttrace/io/shard.h"
#include "ttrace/io/tensor_id.h"

#include <hdf5.h>

#include <filesystem>
#include <utility>
#include <vector>

namespace ttrace {

struct RankFileIndex {
    std::vector<IndexedShard> shards;
    std::int64_t bytes = 0;
    bool usable = false; // false: the file could not be opened at all
};

// Checks the file of `entry` against the manifest and indexes its datasets (libhdf5 runs in
// the ttrace-index child, see isolated_index.h); every problem is appended to `out` with the
// file, rank and dataset it concerns.
RankFileIndex indexRankFile(const std::filesystem::path& bundleDir, const Manifest& manifest,
                            const RankEntry& entry, Diagnostics& out);

// The in-memory HDF5 type we read each dtype's storage into (little-endian host).
hid_t memoryTypeFor(DType dtype);

} // namespace ttrace
