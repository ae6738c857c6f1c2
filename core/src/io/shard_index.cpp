#include "io/shard_index.h"

#include "io/file_integrity.h"
#include "io/h5_handle.h"
#include "io/h5_storage.h"
#include "io/regular_file.h"
#include "io/utf8.h"
#include "ttrace/checked_math.h"
#include "ttrace/placement_attributes.h"

#include <array>
#include <map>
#include <mutex>
#include <string>

namespace ttrace {
namespace {

struct VisitState {
    const std::filesystem::path* file = nullptr;
    int rank = 0;
    RankFileIndex* index = nullptr;
    Diagnostics* out = nullptr;
    std::int64_t fileBytes = 0;
};

std::string where(const std::filesystem::path& file, int rank, const std::string& dataset = {}) {
    std::string w = "rank " + std::to_string(rank) + " (" + file.string() + ")";
    if (!dataset.empty()) {
        w += " " + escapeInvalidUtf8(dataset);
    }
    return w;
}

// Whether the HDF5 storage type can hold `dtype` bit-exactly as the format prescribes. The
// sign matters: bfloat16 bits stored as int16 would be clamped by HDF5's conversion to uint16.
bool storageMatches(hid_t type, DType dtype) {
    const H5T_class_t cls = H5Tget_class(type);
    const std::size_t size = H5Tget_size(type);
    const bool isUnsigned = cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE;
    const bool isSigned = cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2;
    switch (dtype) {
    case DType::Float64: return cls == H5T_FLOAT && size == 8;
    case DType::Float32: return cls == H5T_FLOAT && size == 4;
    case DType::Float16:
    case DType::BFloat16: return isUnsigned && size == 2;
    case DType::Int64: return isSigned && size == 8;
    case DType::Int32: return isSigned && size == 4;
    case DType::Float8E4M3:
    case DType::Float8E5M2:
    case DType::UInt8: return isUnsigned && size == 1;
    case DType::Bool:
        // h5py stores numpy bool as an HDF5 enum of one byte.
        return (isUnsigned || cls == H5T_ENUM) && size == 1;
    }
    return false;
}

// A diagnostic about one dataset: its code and message (the location is added by the caller).
struct Problem {
    std::string code;
    std::string message;
};

// "missing" when absent, "bad-attribute" when present but not one value of the right kind.
Problem attributeProblem(hid_t dataset, const char* name, const char* kind) {
    if (h5::hasAttr(dataset, name)) {
        return {"bad-attribute", "attribute '" + std::string(name) + "' is not a single " + kind};
    }
    return {"missing-attribute", "attribute '" + std::string(name) + "' is missing"};
}

std::optional<Placement> readPlacement(hid_t dataset, const Shape& localShape, bool isScalar,
                                       PlacementProblem& problem) {
    PlacementAttributes a;
    a.isScalar = isScalar;
    problem.code = "bad-placement";
    const auto globalShape = h5::readIntArrayAttr(dataset, "global_shape");
    const auto kind = h5::readStringAttr(dataset, "placement");
    const auto combine = h5::readStringAttr(dataset, "combine");
    if (!globalShape || globalShape->dims.size() != 1) {
        problem.message = "attribute 'global_shape' is missing or not a 1-D integer array";
        return std::nullopt;
    }
    if (!kind || !combine) {
        problem.message = "attribute 'placement' or 'combine' is missing";
        return std::nullopt;
    }
    a.globalShape = globalShape->values;
    a.placement = *kind;
    a.combine = *combine;
    a.partialIndex = h5::readIntAttr(dataset, "partial_index").value_or(0);
    auto table = [](hid_t d, const char* name, std::optional<std::vector<std::int64_t>>& values,
                    std::optional<std::int64_t>& width) {
        if (auto array = h5::readIntArrayAttr(d, name)) {
            values = std::move(array->values);
            if (array->dims.size() == 2) {
                width = array->dims[1];
            }
        }
    };
    table(dataset, "boxes", a.boxes, a.boxesWidth);
    table(dataset, "flat_ranges", a.flatRanges, a.flatWidth);
    return placementFromAttributes(a, localShape, problem);
}

// The element type: a known dtype name stored in the storage type the format prescribes.
std::optional<DType> readDType(hid_t dataset, Problem& problem) {
    const auto name = h5::readStringAttr(dataset, "dtype");
    if (!name) {
        problem = attributeProblem(dataset, "dtype", "string");
        return std::nullopt;
    }
    const auto dtype = parseDType(*name);
    if (!dtype) {
        problem = {"unknown-dtype", "unknown dtype '" + *name + "'"};
        return std::nullopt;
    }
    h5::Datatype type(H5Dget_type(dataset));
    if (!storageMatches(type.get(), *dtype)) {
        problem = {"storage-mismatch",
                   "HDF5 storage type does not match dtype '" + *name +
                       "' (the format stores it as " +
                       (isFloating(*dtype) && dtypeSize(*dtype) < 4 ? "unsigned " : "") +
                       std::to_string(dtypeSize(*dtype) * 8) + "-bit values)"};
        return std::nullopt;
    }
    return dtype;
}

// Variant, module, kind, index, iteration and micro-batch: who this tensor is.
std::optional<TensorId> readIdentity(hid_t dataset, Problem& problem) {
    TensorId id;
    for (const auto& [name, slot] :
         {std::pair{"variant", &id.variant}, std::pair{"module", &id.module},
          std::pair{"index", &id.index}}) {
        auto value = h5::readStringAttr(dataset, name);
        if (!value) {
            problem = attributeProblem(dataset, name, "string");
            return std::nullopt;
        }
        *slot = std::move(*value);
    }
    for (const auto& [name, slot] :
         {std::pair{"iteration", &id.iteration}, std::pair{"micro_batch", &id.microBatch}}) {
        const auto value = h5::readIntAttr(dataset, name);
        if (!value) {
            problem = attributeProblem(dataset, name, "integer");
            return std::nullopt;
        }
        *slot = *value;
    }
    const auto kind = h5::readStringAttr(dataset, "kind");
    if (!kind) {
        problem = attributeProblem(dataset, "kind", "string");
        return std::nullopt;
    }
    const auto parsedKind = parseTensorKind(*kind);
    if (!parsedKind) {
        problem = {"unknown-kind", "unknown tensor kind '" + *kind + "'"};
        return std::nullopt;
    }
    id.kind = *parsedKind;
    return id;
}

// The dataset's shape, and that its bytes are really in this file: a dataset may declare a
// shape far larger than what it stores (or point into other files), and nothing is ever
// allocated for it before this check.
std::optional<Shape> readStoredShape(hid_t dataset, DType dtype, std::int64_t fileBytes,
                                     Problem& problem) {
    h5::Dataspace space(H5Dget_space(dataset));
    const int ndims = H5Sget_simple_extent_ndims(space.get());
    std::array<hsize_t, 32> dims{};
    if (ndims < 0 || ndims > static_cast<int>(dims.size())) {
        problem = {"bad-shape", "dataset has an unsupported number of dimensions"};
        return std::nullopt;
    }
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    Shape shape;
    std::optional<std::int64_t> bytes = static_cast<std::int64_t>(dtypeSize(dtype));
    for (int d = 0; d < ndims; ++d) {
        const auto n = dims[static_cast<std::size_t>(d)];
        shape.push_back(static_cast<std::int64_t>(n));
        bytes = n > static_cast<hsize_t>(kMaxLogicalElements) || !bytes
                    ? std::nullopt
                    : checkedMul(*bytes, static_cast<std::int64_t>(n));
    }
    if (!bytes) {
        problem = {"bad-shape", "dataset shape " + shapeToString(shape) + " is implausibly large"};
        return std::nullopt;
    }
    if (auto why = storageProblem(dataset, *bytes, fileBytes)) {
        problem = {"short-data", *why};
        return std::nullopt;
    }
    return shape;
}

void indexDataset(hid_t file, const char* name, VisitState& state) {
    const std::string path = std::string("/") + name;
    auto fail = [&](const Problem& p) {
        state.out->push_back(makeError(p.code, where(*state.file, state.rank, path), p.message));
    };
    h5::Dataset dataset(H5Dopen2(file, name, H5P_DEFAULT));
    if (!dataset) {
        fail({"unreadable-dataset", "cannot open dataset: " + h5::lastErrorMessage()});
        return;
    }
    Problem problem;
    const auto dtype = readDType(dataset.get(), problem);
    auto id = dtype ? readIdentity(dataset.get(), problem) : std::nullopt;
    auto shape =
        id ? readStoredShape(dataset.get(), *dtype, state.fileBytes, problem) : std::nullopt;
    if (!shape) {
        fail(problem);
        return;
    }
    ShardRef shard;
    shard.rank = state.rank;
    shard.datasetPath = path;
    shard.dtype = *dtype;
    shard.localShape = std::move(*shape);
    const bool isScalar = h5::readIntAttr(dataset.get(), "is_scalar").value_or(0) != 0;
    PlacementProblem placementProblem;
    auto placement = readPlacement(dataset.get(), shard.localShape, isScalar, placementProblem);
    if (!placement) {
        fail({placementProblem.code, placementProblem.message});
        return;
    }
    shard.placement = std::move(*placement);
    shard.layoutNote = h5::readStringAttr(dataset.get(), "layout_note").value_or("");
    shard.annotateHint = h5::readStringAttr(dataset.get(), "annotate_hint").value_or("");
    state.index->bytes += shard.bytes();
    state.index->shards.push_back({std::move(*id), std::move(shard)});
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
    if (const auto kind = fileKind(file); kind == FileKind::Missing) {
        out.push_back(makeError("missing-rank-file", loc,
                                "rank " + std::to_string(entry.rank) + ": " + entry.file +
                                    " is missing (the manifest lists " +
                                    std::to_string(manifest.worldSize) + " ranks)"));
        return false;
    } else if (kind != FileKind::Regular) {
        // Checked before anything opens it: reading a FIFO blocks forever.
        out.push_back(makeError("not-regular-file", loc,
                                "rank " + std::to_string(entry.rank) + ": " + entry.file + " is " +
                                    fileKindName(kind) + ", not a regular file"));
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

// The coordinates the file records (coord_tp, ...) must be the manifest's for that rank.
void checkRootCoords(hid_t root, const RankEntry& entry, const std::string& loc, Diagnostics& out) {
    const auto& c = entry.coords;
    const std::pair<const char*, int> coords[] = {{"coord_tp", c.tp}, {"coord_pp", c.pp},
                                                  {"coord_dp", c.dp}, {"coord_cp", c.cp},
                                                  {"coord_ep", c.ep}, {"coord_vpp", c.vpp}};
    for (const auto& [name, value] : coords) {
        const auto fileValue = h5::readIntAttr(root, name);
        if (fileValue && *fileValue != value) {
            out.push_back(makeError("coords-mismatch", loc,
                                    "rank " + std::to_string(entry.rank) + ": the file says " +
                                        (name + 6) + " " + std::to_string(*fileValue) +
                                        ", the manifest " + std::to_string(value)));
            return;
        }
    }
}

// Rank, world size, role and coordinates recorded in the file against the manifest.
void checkRootIdentity(hid_t root, const Manifest& manifest, const RankEntry& entry,
                       const std::string& loc, Diagnostics& out) {
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
        out.push_back(
            makeError("rank-attr-mismatch", loc,
                      "the file says role '" + role + "', the manifest '" + manifest.role + "'"));
    }

    checkRootCoords(root, entry, loc, out);
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
    checkRootIdentity(root, manifest, entry, loc, out);
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

// Two datasets of one rank file with the same identity would be merged as two shards of one
// rank; the first is kept, the others are reported.
void dropDuplicates(const std::filesystem::path& file, int rank, RankFileIndex& index,
                    Diagnostics& out) {
    std::map<TensorId, std::string> seen;
    std::vector<IndexedShard> kept;
    for (auto& item : index.shards) {
        const auto [it, fresh] = seen.emplace(item.id, item.shard.datasetPath);
        if (fresh) {
            kept.push_back(std::move(item));
            continue;
        }
        out.push_back(makeError("duplicate-tensor", where(file, rank, it->second),
                                "rank " + std::to_string(rank) + " holds tensor " + item.id.path() +
                                    " twice (also as dataset " +
                                    escapeInvalidUtf8(item.shard.datasetPath) + ")"));
    }
    index.shards = std::move(kept);
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
    std::error_code ec;
    const auto fileBytes = static_cast<std::int64_t>(std::filesystem::file_size(file, ec));
    VisitState state{&file, entry.rank, &index, &out, ec ? 0 : fileBytes};
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
    dropDuplicates(file, entry.rank, index, out);
    index.usable = true;
    return index;
}

} // namespace ttrace
