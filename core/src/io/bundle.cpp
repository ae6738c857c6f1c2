#include "ttrace/io/bundle.h"

#include "io/h5_handle.h"
#include "io/rank_file_reader.h"
#include "io/shard_index.h"
#include "ttrace/io/bundle_error.h"

#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ttrace {

class OpenFileCache {
public:
    // The open handle of `file`, opening it on first use. Call with h5::apiMutex() held.
    hid_t get(const std::filesystem::path& file) {
        auto it = files_.find(file);
        if (it == files_.end()) {
            it = files_.emplace(file, h5::openReadOnly(file.string())).first;
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
    std::vector<std::byte> raw(static_cast<std::size_t>(shard.bytes()));
    readShardInto(shard, raw, Target::Contiguous);
    return raw;
}

namespace {

// The memory dataspace that puts a shard where its one box (or flat range) lies in the
// logical tensor; checked by the caller with placesDirectly.
h5::Dataspace placedSpace(const ShardRef& shard) {
    const auto& p = shard.placement;
    std::vector<hsize_t> dims, start, count;
    if (p.kind == PlacementKind::Flat) {
        dims.push_back(static_cast<hsize_t>(elementCount(p.globalShape)));
        start.push_back(static_cast<hsize_t>(p.ranges.front().globalOffset));
        count.push_back(static_cast<hsize_t>(p.ranges.front().length));
    } else {
        for (std::size_t d = 0; d < p.globalShape.size(); ++d) {
            dims.push_back(static_cast<hsize_t>(p.globalShape[d]));
            start.push_back(static_cast<hsize_t>(p.boxes.front().dims[d].globalStart));
            count.push_back(static_cast<hsize_t>(p.boxes.front().dims[d].length));
        }
    }
    h5::Dataspace space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    if (space && H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                     count.data(), nullptr) < 0) {
        return h5::Dataspace(-1);
    }
    return space;
}

// Row-major element strides of the logical tensor.
std::vector<std::size_t> stridesOf(const Shape& shape) {
    std::vector<std::size_t> stride(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;) {
        stride[d - 1] = stride[d] * static_cast<std::size_t>(shape[d]);
    }
    return stride;
}

// Where a shard's bytes start in the logical tensor's bytes when they are one run there (a
// flat range, or a box that is full in every dimension after its last partial one and one
// element wide before it: a row split); nothing for a strided box (a column split).
std::optional<std::size_t> contiguousByteOffset(const ShardRef& shard) {
    const auto& p = shard.placement;
    const auto esize = static_cast<std::size_t>(dtypeSize(shard.dtype));
    if (p.kind == PlacementKind::Flat) {
        return static_cast<std::size_t>(p.ranges.front().globalOffset) * esize;
    }
    const auto& dims = p.boxes.front().dims;
    std::size_t partial = 0; // the last dimension the box does not span whole
    for (std::size_t d = 0; d < dims.size(); ++d) {
        if (dims[d].length != p.globalShape[d]) {
            partial = d;
        }
    }
    const auto stride = stridesOf(p.globalShape);
    std::size_t offset = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) {
        if (d < partial && dims[d].length != 1) {
            return std::nullopt;
        }
        offset += static_cast<std::size_t>(dims[d].globalStart) * stride[d];
    }
    return offset * esize;
}

// Copies a strided box's local bytes (row-major) to where the box lies in the logical
// tensor's bytes, a run of its last dimension at a time; the caller checked the geometry
// with placesDirectly.
void placeLocalBytes(const ShardRef& shard, std::span<const std::byte> local,
                     std::span<std::byte> dst) {
    const auto& p = shard.placement;
    const auto esize = static_cast<std::size_t>(dtypeSize(shard.dtype));
    const auto& dims = p.boxes.front().dims;
    const std::size_t n = p.globalShape.size();
    const auto stride = stridesOf(p.globalShape);
    const auto run = static_cast<std::size_t>(dims[n - 1].length) * esize;
    std::vector<std::int64_t> at(n, 0); // position inside the box, last dimension fixed at 0
    for (std::size_t copied = 0; copied < local.size(); copied += run) {
        std::size_t offset = 0;
        for (std::size_t d = 0; d < n; ++d) {
            offset += static_cast<std::size_t>(dims[d].globalStart + at[d]) * stride[d];
        }
        std::memcpy(dst.data() + offset * esize, local.data() + copied, run);
        for (std::size_t d = n - 1; d-- > 0;) { // odometer over every dimension but the last
            if (++at[d] < dims[d].length) {
                break;
            }
            at[d] = 0;
        }
    }
}

} // namespace

void Bundle::readShardInto(const ShardRef& shard, std::span<std::byte> dst, Target target) const {
    const auto file = rankFile(shard.rank);
    const auto esize = static_cast<std::int64_t>(dtypeSize(shard.dtype));
    const bool placed = target == Target::InTensor && !shard.localShape.empty();
    const std::int64_t want = target == Target::Contiguous
                                  ? shard.bytes()
                                  : elementCount(shard.placement.globalShape) * esize;
    if (static_cast<std::int64_t>(dst.size()) != want ||
        (target == Target::InTensor && !placesDirectly(shard.placement, shard.localShape))) {
        throw BundleError(file.string() + ": " + shard.datasetPath +
                          " does not fit the buffer it is read into");
    }
    if (shard.fileOffset) {
        // Contiguous data where the index found it: no libhdf5 in this process.
        if (!placed) {
            readRankFileBytes(file, *shard.fileOffset,
                              dst.first(static_cast<std::size_t>(shard.bytes())));
            return;
        }
        const auto bytes = static_cast<std::size_t>(shard.bytes());
        if (const auto at = contiguousByteOffset(shard)) {
            readRankFileBytes(file, *shard.fileOffset, dst.subspan(*at, bytes));
            return;
        }
        std::vector<std::byte> local(bytes);
        readRankFileBytes(file, *shard.fileOffset, local);
        placeLocalBytes(shard, local, dst);
        return;
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
    if (shard.bytes() == 0) {
        return;
    }
    // Scalars and contiguous reads need no selection; a placed read selects the shard's box
    // in a memory space of the logical tensor's shape.
    const h5::Dataspace memory = placed ? placedSpace(shard) : h5::Dataspace();
    const hid_t memorySpace = placed ? memory.get() : H5S_ALL;
    if ((placed && !memory) || H5Dread(dataset.get(), memoryTypeFor(shard.dtype), memorySpace,
                                       H5S_ALL, H5P_DEFAULT, dst.data()) < 0) {
        throw BundleError(file.string() + ": reading " + shard.datasetPath +
                          " failed: " + h5::lastErrorMessage() + " (truncated file?)");
    }
}

} // namespace ttrace
