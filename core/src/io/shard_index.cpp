#include "io/shard_index.h"

#include "io/file_integrity.h"
#include "io/h5_handle.h"
#include "ttrace/placement_attributes.h"

#include <array>
#include <mutex>
#include <string>

namespace ttrace {
namespace {

struct VisitState {
    const std::filesystem::path* file = nullptr;
    int rank = 0;
    RankFileIndex* index = nullptr;
    Diagnostics* out = nullptr;
};

std::string where(const std::filesystem::path& file, int rank, const std::string& dataset = {}) {
    std::string w = "rank " + std::to_string(rank) + " (" + file.string() + ")";
    if (!dataset.empty()) {
        w += " " + dataset;
    }
    return w;
}

// Whether the HDF5 storage type can hold `dtype` bit-exactly as the format prescribes.
bool storageMatches(hid_t type, DType dtype) {
    const H5T_class_t cls = H5Tget_class(type);
    const std::size_t size = H5Tget_size(type);
    switch (dtype) {
    case DType::Float64: return cls == H5T_FLOAT && size == 8;
    case DType::Float32: return cls == H5T_FLOAT && size == 4;
    case DType::Float16:
    case DType::BFloat16: return cls == H5T_INTEGER && size == 2;
    case DType::Int64: return cls == H5T_INTEGER && size == 8;
    case DType::Int32: return cls == H5T_INTEGER && size == 4;
    case DType::Float8E4M3:
    case DType::Float8E5M2:
    case DType::UInt8:
    case DType::Bool:
        // h5py stores numpy bool as an HDF5 enum of one byte.
        return (cls == H5T_INTEGER || cls == H5T_ENUM) && size == 1;
    }
    return false;
}

std::optional<Placement> readPlacement(hid_t dataset, const Shape& localShape, bool isScalar,
                                       PlacementProblem& problem) {
    PlacementAttributes a;
    a.isScalar = isScalar;
    problem.code = "bad-placement";
    const auto globalShape = h5::readIntArrayAttr(dataset, "global_shape");
    if (!globalShape || globalShape->dims.size() != 1) {
        problem.message = "attribute 'global_shape' is missing or not a 1-D integer array";
        return std::nullopt;
    }
    a.globalShape = globalShape->values;
    const auto kind = h5::readStringAttr(dataset, "placement");
    const auto combine = h5::readStringAttr(dataset, "combine");
    if (!kind || !combine) {
        problem.message = "attribute 'placement' or 'combine' is missing";
        return std::nullopt;
    }
    a.placement = *kind;
    a.combine = *combine;
    a.partialIndex = h5::readIntAttr(dataset, "partial_index").value_or(0);
    if (auto boxes = h5::readIntArrayAttr(dataset, "boxes")) {
        a.boxes = std::move(boxes->values);
        if (boxes->dims.size() == 2) {
            a.boxesWidth = boxes->dims[1];
        }
    }
    if (auto ranges = h5::readIntArrayAttr(dataset, "flat_ranges")) {
        a.flatRanges = std::move(ranges->values);
        if (ranges->dims.size() == 2) {
            a.flatWidth = ranges->dims[1];
        }
    }
    return placementFromAttributes(a, localShape, problem);
}

void indexDataset(hid_t file, const char* name, VisitState& state) {
    const std::string path = std::string("/") + name;
    const auto loc = where(*state.file, state.rank, path);
    auto fail = [&](const std::string& code, const std::string& message) {
        state.out->push_back(makeError(code, loc, message));
    };
    h5::Dataset dataset(H5Dopen2(file, name, H5P_DEFAULT));
    if (!dataset) {
        fail("unreadable-dataset", "cannot open dataset: " + h5::lastErrorMessage());
        return;
    }
    const auto dtypeName = h5::readStringAttr(dataset.get(), "dtype");
    if (!dtypeName) {
        fail("missing-attribute", "attribute 'dtype' is missing");
        return;
    }
    const auto dtype = parseDType(*dtypeName);
    if (!dtype) {
        fail("unknown-dtype", "unknown dtype '" + *dtypeName + "'");
        return;
    }
    h5::Datatype type(H5Dget_type(dataset.get()));
    if (!storageMatches(type.get(), *dtype)) {
        fail("storage-mismatch", "HDF5 storage type does not match dtype '" + *dtypeName + "'");
        return;
    }
    TensorId id;
    const auto variant = h5::readStringAttr(dataset.get(), "variant");
    const auto module = h5::readStringAttr(dataset.get(), "module");
    const auto kind = h5::readStringAttr(dataset.get(), "kind");
    const auto index = h5::readStringAttr(dataset.get(), "index");
    const auto iteration = h5::readIntAttr(dataset.get(), "iteration");
    const auto microBatch = h5::readIntAttr(dataset.get(), "micro_batch");
    if (!variant || !module || !kind || !index || !iteration || !microBatch) {
        fail("missing-attribute",
             "identity attributes (variant, module, kind, index, iteration, micro_batch) are "
             "incomplete");
        return;
    }
    const auto parsedKind = parseTensorKind(*kind);
    if (!parsedKind) {
        fail("unknown-kind", "unknown tensor kind '" + *kind + "'");
        return;
    }
    id.variant = *variant;
    id.module = *module;
    id.kind = *parsedKind;
    id.index = *index;
    id.iteration = *iteration;
    id.microBatch = *microBatch;

    h5::Dataspace space(H5Dget_space(dataset.get()));
    const int ndims = H5Sget_simple_extent_ndims(space.get());
    std::array<hsize_t, 32> dims{};
    if (ndims < 0 || ndims > static_cast<int>(dims.size())) {
        fail("bad-shape", "dataset has an unsupported number of dimensions");
        return;
    }
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    ShardRef shard;
    shard.rank = state.rank;
    shard.datasetPath = path;
    shard.dtype = *dtype;
    for (int d = 0; d < ndims; ++d) {
        shard.localShape.push_back(static_cast<std::int64_t>(dims[static_cast<std::size_t>(d)]));
    }
    const bool isScalar = h5::readIntAttr(dataset.get(), "is_scalar").value_or(0) != 0;
    PlacementProblem problem;
    auto placement = readPlacement(dataset.get(), shard.localShape, isScalar, problem);
    if (!placement) {
        fail(problem.code, problem.message);
        return;
    }
    shard.placement = std::move(*placement);
    shard.layoutNote = h5::readStringAttr(dataset.get(), "layout_note").value_or("");
    shard.annotateHint = h5::readStringAttr(dataset.get(), "annotate_hint").value_or("");
    state.index->bytes += shard.bytes();
    state.index->shards.push_back({std::move(id), std::move(shard)});
}

} // namespace

hid_t memoryTypeFor(DType dtype) {
    switch (dtype) {
    case DType::Float64: return H5T_NATIVE_DOUBLE;
    case DType::Float32: return H5T_NATIVE_FLOAT;
    case DType::Float16:
    case DType::BFloat16: return H5T_NATIVE_UINT16;
    case DType::Int64: return H5T_NATIVE_INT64;
    case DType::Int32: return H5T_NATIVE_INT32;
    case DType::Float8E4M3:
    case DType::Float8E5M2:
    case DType::UInt8:
    case DType::Bool: return H5T_NATIVE_UINT8;
    }
    return H5T_NATIVE_UINT8;
}

namespace {

const char* integrityCode(IntegrityFailure kind) {
    switch (kind) {
    case IntegrityFailure::Unreadable: return "unreadable-file";
    case IntegrityFailure::WrongSize: return "truncated-file";
    case IntegrityFailure::WrongCrc: return "damaged-file";
    }
    return "damaged-file";
}

// Before HDF5 parses anything: the file exists, is HDF5 and has the recorded size and CRC-32.
// Caller holds the HDF5 API mutex.
bool fileLooksIntact(const std::filesystem::path& file, const Manifest& manifest,
                     const RankEntry& entry, const std::string& loc, Diagnostics& out) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
        out.push_back(makeError("missing-rank-file", loc,
                                "rank " + std::to_string(entry.rank) + ": " + entry.file +
                                    " is missing (the manifest lists " +
                                    std::to_string(manifest.worldSize) + " ranks)"));
        return false;
    }
    switch (h5::checkSignature(file.string())) {
    case h5::SignatureCheck::Unreadable:
        out.push_back(makeError("unreadable-file", loc, entry.file + " cannot be read"));
        return false;
    case h5::SignatureCheck::NotHdf5:
        out.push_back(makeError("not-hdf5", loc, entry.file + " is not an HDF5 file"));
        return false;
    case h5::SignatureCheck::IsHdf5: break;
    }
    if (auto problem = checkFileIntegrity(file, entry.fileSize, entry.crc32)) {
        out.push_back(
            makeError(integrityCode(problem->kind), loc, entry.file + " " + problem->message));
        return false;
    }
    return true;
}

// The root attributes: format and version must match (else nothing is indexed); rank, world
// size and role mismatches are reported and indexing goes on.
bool rootMatches(hid_t root, const Manifest& manifest, const RankEntry& entry,
                 const std::string& loc, Diagnostics& out) {
    const auto format = h5::readStringAttr(root, "format");
    const auto version = h5::readIntAttr(root, "format_version");
    if (format.value_or("") != "ttrace-bundle") {
        out.push_back(makeError("bad-format", loc, "root attribute format is not 'ttrace-bundle'"));
        return false;
    }
    if (version.value_or(-1) != kFormatVersion) {
        out.push_back(makeError("unknown-version", loc,
                                "format_version " + std::to_string(version.value_or(-1)) +
                                    " is not supported (expected " +
                                    std::to_string(kFormatVersion) + ")"));
        return false;
    }
    const auto rank = h5::readIntAttr(root, "rank").value_or(-1);
    if (rank != entry.rank) {
        out.push_back(makeError("rank-attr-mismatch", loc,
                                "the file says rank " + std::to_string(rank) +
                                    " but the manifest lists it as rank " +
                                    std::to_string(entry.rank)));
    }
    const auto worldSize = h5::readIntAttr(root, "world_size").value_or(-1);
    if (worldSize != manifest.worldSize) {
        out.push_back(makeError("rank-attr-mismatch", loc,
                                "the file says world_size " + std::to_string(worldSize) +
                                    ", the manifest " + std::to_string(manifest.worldSize)));
    }
    const auto role = h5::readStringAttr(root, "role").value_or("");
    if (role != manifest.role) {
        out.push_back(makeError("rank-attr-mismatch", loc,
                                "the file says role '" + role + "', the manifest '" +
                                    manifest.role + "'"));
    }
    return true;
}

void checkCounts(const RankEntry& entry, const RankFileIndex& index, const std::string& loc,
                 Diagnostics& out) {
    const auto count = static_cast<std::int64_t>(index.shards.size());
    if (entry.tensors >= 0 && entry.tensors != count) {
        out.push_back(makeError("tensor-count-mismatch", loc,
                                entry.file + " holds " + std::to_string(count) +
                                    " tensors, the manifest records " +
                                    std::to_string(entry.tensors) + " (incomplete write?)"));
    } else if (entry.bytes >= 0 && entry.bytes != index.bytes) {
        out.push_back(makeError("byte-count-mismatch", loc,
                                entry.file + " holds " + std::to_string(index.bytes) +
                                    " bytes of tensor data, the manifest records " +
                                    std::to_string(entry.bytes)));
    }
}

} // namespace

RankFileIndex indexRankFile(const std::filesystem::path& bundleDir, const Manifest& manifest,
                            const RankEntry& entry, Diagnostics& out) {
    RankFileIndex index;
    const auto file = bundleDir / entry.file;
    const auto loc = where(file, entry.rank);
    const std::lock_guard lock(h5::apiMutex());
    h5::silenceErrorPrinting();
    if (!fileLooksIntact(file, manifest, entry, loc, out)) {
        return index;
    }
    h5::File handle(H5Fopen(file.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (!handle) {
        const auto reason = h5::lastErrorMessage();
        out.push_back(makeError("damaged-file", loc,
                                entry.file + " cannot be opened by HDF5 (" + reason +
                                    "); the file is truncated or damaged, copy it again"));
        return index;
    }
    if (!rootMatches(handle.get(), manifest, entry, loc, out)) {
        return index;
    }
    VisitState state{&file, entry.rank, &index, &out};
    const herr_t status = H5Ovisit2(
        handle.get(), H5_INDEX_NAME, H5_ITER_INC,
        [](hid_t obj, const char* name, const H5O_info_t* info, void* data) -> herr_t {
            if (info->type == H5O_TYPE_DATASET) {
                indexDataset(obj, name, *static_cast<VisitState*>(data));
            }
            return 0;
        },
        &state, H5O_INFO_BASIC);
    if (status < 0) {
        out.push_back(makeError("damaged-file", loc,
                                "walking the file failed (" + h5::lastErrorMessage() +
                                    "); the file is truncated or damaged"));
    }
    checkCounts(entry, index, loc, out);
    index.usable = true;
    return index;
}

} // namespace ttrace
