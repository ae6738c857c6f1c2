#pragma once
// An opened trace bundle: its manifest and an index of every logical tensor to the shards that
// hold it. Immutable after opening, so it can be shared freely between threads and front ends.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/manifest.h"
#include "ttrace/io/progress.h"
#include "ttrace/io/shard.h"
#include "ttrace/io/tensor_id.h"

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace ttrace {

class OpenFileCache; // HDF5 handles, private to core (keeps hdf5.h out of this header)

class Bundle {
public:
    using TensorIndex = std::map<TensorId, std::vector<ShardRef>>;

    Bundle(std::filesystem::path dir, Manifest manifest, TensorIndex index);
    ~Bundle();
    Bundle(const Bundle&) = delete;
    Bundle& operator=(const Bundle&) = delete;

    [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
    [[nodiscard]] const Manifest& manifest() const { return manifest_; }
    [[nodiscard]] const TensorIndex& tensors() const { return index_; }
    [[nodiscard]] const std::vector<ShardRef>* shards(const TensorId& id) const;
    [[nodiscard]] std::filesystem::path rankFile(int rank) const;

    // Reads a shard's raw little-endian bytes. Throws BundleError naming file and dataset on
    // failure (a file that changed or vanished since opening).
    [[nodiscard]] std::vector<std::byte> readShard(const ShardRef& shard) const;

    // Reads a shard's raw little-endian bytes into a caller's buffer, with no intermediate
    // copy. Contiguous: `dst` holds exactly the shard (shard.bytes()). InTensor: `dst` is the
    // whole logical tensor, row-major in the shard's dtype, and the bytes land where the
    // shard's placement puts them; the placement must be one box (or flat range) covering all
    // of the shard's local data (placesDirectly). Throws BundleError on a wrong size or
    // placement, or as readShard does.
    enum class Target { Contiguous, InTensor };
    void readShardInto(const ShardRef& shard, std::span<std::byte> dst, Target target) const;

private:
    std::filesystem::path dir_;
    Manifest manifest_;
    TensorIndex index_;
    // Rank files stay open while the bundle lives: a diff or validate reads every shard, and
    // reopening a file per shard read costs a superblock parse each time.
    std::unique_ptr<OpenFileCache> files_;
};

struct BundleOpenResult {
    std::shared_ptr<const Bundle> bundle; // null when the bundle cannot be used at all
    Diagnostics diagnostics;              // errors and warnings found while opening
    bool cancelled = false;
    [[nodiscard]] bool ok() const { return bundle && !hasErrors(diagnostics); }
};

// Opens a bundle directory: parses the manifest, checks every rank file (present, HDF5, not
// truncated, attributes agree) and indexes every tensor dataset with its placement. Structural
// problems come back as diagnostics; the bundle is still returned when its manifest is usable
// so that front ends can show what is there.
BundleOpenResult openBundle(const std::filesystem::path& dir, const ProgressFn& progress = {});

} // namespace ttrace
