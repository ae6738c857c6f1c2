#include "ttrace/bundle.h"

#include "io/h5_handle.h"
#include "io/rank_file_reader.h"
#include "io/shard_index.h"
#include "ttrace/bundle_error.h"

#include <map>
#include <utility>

namespace ttrace {

class OpenFileCache {
public:
    // The open handle of `file`, opening it on first use. Call with h5::apiMutex() held.
    hid_t get(const std::filesystem::path& file) {
        auto it = files_.find(file);
        if (it == files_.end()) {
            it = files_
                     .emplace(file,
                              h5::File(H5Fopen(file.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)))
                     .first;
        }
        return it->second.get();
    }

private:
    std::map<std::filesystem::path, h5::File> files_;
};

Bundle::Bundle(std::filesystem::path dir, Manifest manifest, TensorIndex index)
    : dir_(std::move(dir))
    , manifest_(std::move(manifest))
    , index_(std::move(index))
    , files_(std::make_unique<OpenFileCache>()) {}

Bundle::~Bundle() {
    // HDF5 handles are closed under the same lock that guards every other HDF5 call.
    const std::lock_guard lock(h5::apiMutex());
    files_.reset();
}

const std::vector<ShardRef>* Bundle::shards(const TensorId& id) const {
    const auto it = index_.find(id);
    return it == index_.end() ? nullptr : &it->second;
}

std::filesystem::path Bundle::rankFile(int rank) const {
    for (const auto& entry : manifest_.ranks) {
        if (entry.rank == rank) {
            return dir_ / entry.file;
        }
    }
    return {};
}

std::vector<std::byte> Bundle::readShard(const ShardRef& shard) const {
    const auto file = rankFile(shard.rank);
    if (shard.fileOffset) {
        // Contiguous data where the index found it: no libhdf5 in this process.
        std::vector<std::byte> raw(static_cast<std::size_t>(shard.bytes()));
        readRankFileBytes(file, *shard.fileOffset, raw);
        return raw;
    }
    const std::lock_guard lock(h5::apiMutex());
    h5::silenceErrorPrinting();
    const hid_t handle = files_->get(file);
    if (handle < 0) {
        throw BundleError(file.string() + ": cannot reopen rank " + std::to_string(shard.rank) +
                          " file: " + h5::lastErrorMessage());
    }
    h5::Dataset dataset(H5Dopen2(handle, shard.datasetPath.c_str(), H5P_DEFAULT));
    if (!dataset) {
        throw BundleError(file.string() + ": dataset " + shard.datasetPath +
                          " vanished: " + h5::lastErrorMessage());
    }
    std::vector<std::byte> raw(static_cast<std::size_t>(shard.bytes()));
    if (!raw.empty() && H5Dread(dataset.get(), memoryTypeFor(shard.dtype), H5S_ALL, H5S_ALL,
                                H5P_DEFAULT, raw.data()) < 0) {
        throw BundleError(file.string() + ": reading " + shard.datasetPath +
                          " failed: " + h5::lastErrorMessage() + " (truncated file?)");
    }
    return raw;
}

} // namespace ttrace
