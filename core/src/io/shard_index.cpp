#include "io/shard_index.h"

#include "io/file_integrity.h"
#include "io/h5_handle.h"
#include "io/isolated_index.h"
#include "io/regular_file.h"
#include "io/utf8.h"

#include <map>
#include <string>

namespace ttrace {
namespace {

std::string where(const std::filesystem::path& file, int rank, const std::string& dataset = {}) {
    std::string w = "rank " + std::to_string(rank) + " (" + file.string() + ")";
    if (!dataset.empty()) {
        w += " " + escapeInvalidUtf8(dataset);
    }
    return w;
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

DiagnosticCode integrityCode(IntegrityFailure kind) {
    switch (kind) {
    case IntegrityFailure::Unreadable: return DiagnosticCode::UnreadableFile;
    case IntegrityFailure::WrongSize: return DiagnosticCode::TruncatedFile;
    case IntegrityFailure::WrongCrc: return DiagnosticCode::DamagedFile;
    }
    return DiagnosticCode::DamagedFile;
}

// Before HDF5 parses anything: the file exists, is HDF5 and has the recorded size and CRC-32.
bool fileLooksIntact(const std::filesystem::path& file, const Manifest& manifest,
                     const RankEntry& entry, const std::string& loc, Diagnostics& out) {
    if (const auto kind = fileKind(file); kind == FileKind::Missing) {
        out.push_back(makeError(DiagnosticCode::MissingRankFile, loc,
                                "rank " + std::to_string(entry.rank) + ": " + entry.file +
                                    " is missing (the manifest lists " +
                                    std::to_string(manifest.worldSize) + " ranks)"));
        return false;
    } else if (kind != FileKind::Regular) {
        // Checked before anything opens it: reading a FIFO blocks forever.
        out.push_back(makeError(DiagnosticCode::NotRegularFile, loc,
                                "rank " + std::to_string(entry.rank) + ": " + entry.file + " is " +
                                    fileKindName(kind) + ", not a regular file"));
        return false;
    }
    switch (h5::checkSignature(file.string())) {
    case h5::SignatureCheck::Unreadable:
        out.push_back(
            makeError(DiagnosticCode::UnreadableFile, loc, entry.file + " cannot be read"));
        return false;
    case h5::SignatureCheck::NotHdf5:
        out.push_back(makeError(DiagnosticCode::NotHdf5, loc, entry.file + " is not an HDF5 file"));
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
void checkRootCoords(const std::vector<AttrFact>& root, const RankEntry& entry,
                     const std::string& loc, Diagnostics& out) {
    const auto& c = entry.coords;
    const std::pair<const char*, int> coords[] = {{"coord_tp", c.tp}, {"coord_pp", c.pp},
                                                  {"coord_dp", c.dp}, {"coord_cp", c.cp},
                                                  {"coord_ep", c.ep}, {"coord_vpp", c.vpp}};
    for (const auto& [name, value] : coords) {
        const auto fileValue = factInt(root, name);
        if (fileValue && *fileValue != value) {
            out.push_back(makeError(DiagnosticCode::CoordsMismatch, loc,
                                    "rank " + std::to_string(entry.rank) + ": the file says " +
                                        (name + 6) + " " + std::to_string(*fileValue) +
                                        ", the manifest " + std::to_string(value)));
            return;
        }
    }
}

// Rank, world size, role and coordinates recorded in the file against the manifest.
void checkRootIdentity(const std::vector<AttrFact>& root, const Manifest& manifest,
                       const RankEntry& entry, const std::string& loc, Diagnostics& out) {
    const auto rank = factInt(root, "rank").value_or(-1);
    if (rank != entry.rank) {
        out.push_back(makeError(DiagnosticCode::RankAttrMismatch, loc,
                                "the file says rank " + std::to_string(rank) +
                                    " but the manifest lists it as rank " +
                                    std::to_string(entry.rank)));
    }
    const auto worldSize = factInt(root, "world_size").value_or(-1);
    if (worldSize != manifest.worldSize) {
        out.push_back(makeError(DiagnosticCode::RankAttrMismatch, loc,
                                "the file says world_size " + std::to_string(worldSize) +
                                    ", the manifest " + std::to_string(manifest.worldSize)));
    }
    const auto role = factText(root, "role").value_or("");
    if (role != manifest.role) {
        out.push_back(
            makeError(DiagnosticCode::RankAttrMismatch, loc,
                      "the file says role '" + role + "', the manifest '" + manifest.role + "'"));
    }

    checkRootCoords(root, entry, loc, out);
}

// The root attributes: format and version must match (else nothing is indexed); rank, world
// size and role mismatches are reported and indexing goes on.
bool rootMatches(const std::vector<AttrFact>& root, const Manifest& manifest,
                 const RankEntry& entry, const std::string& loc, Diagnostics& out) {
    const auto format = factText(root, "format");
    const auto version = factInt(root, "format_version");
    if (format.value_or("") != "ttrace-bundle") {
        out.push_back(makeError(DiagnosticCode::BadFormat, loc,
                                "root attribute format is not 'ttrace-bundle'"));
        return false;
    }
    // A rank file is written with its manifest: their versions agree.
    if (version.value_or(-1) != manifest.formatVersion) {
        out.push_back(makeError(DiagnosticCode::UnknownVersion, loc,
                                "format_version " + std::to_string(version.value_or(-1)) +
                                    " is not supported (expected " +
                                    std::to_string(manifest.formatVersion) + ", as the manifest)"));
        return false;
    }
    checkRootIdentity(root, manifest, entry, loc, out);
    return true;
}

void checkCounts(const RankEntry& entry, const RankFileIndex& index, const std::string& loc,
                 Diagnostics& out) {
    const auto count = static_cast<std::int64_t>(index.shards.size());
    if (entry.tensors >= 0 && entry.tensors != count) {
        out.push_back(makeError(DiagnosticCode::TensorCountMismatch, loc,
                                entry.file + " holds " + std::to_string(count) +
                                    " tensors, the manifest records " +
                                    std::to_string(entry.tensors) + " (incomplete write?)"));
    } else if (entry.bytes >= 0 && entry.bytes != index.bytes) {
        out.push_back(makeError(DiagnosticCode::ByteCountMismatch, loc,
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
        out.push_back(makeError(DiagnosticCode::DuplicateTensor, where(file, rank, it->second),
                                "rank " + std::to_string(rank) + " holds tensor " + item.id.path() +
                                    " twice (also as dataset " +
                                    escapeInvalidUtf8(item.shard.datasetPath) + ")"));
    }
    index.shards = std::move(kept);
}

} // namespace

namespace {

// Every dataset's facts become a shard, or a diagnostic naming file, rank and dataset.
void indexDatasets(const std::filesystem::path& file, int rank, const RankFacts& facts,
                   std::int64_t fileBytes, RankFileIndex& index, Diagnostics& out) {
    for (const auto& dataset : facts.datasets) {
        DatasetProblem problem;
        auto shard = shardFromFacts(dataset, rank, fileBytes, problem);
        if (!shard) {
            out.push_back(
                makeError(problem.code, where(file, rank, dataset.path), problem.message));
            continue;
        }
        index.bytes += shard->shard.bytes();
        index.shards.push_back(std::move(*shard));
    }
}

} // namespace

RankFileIndex indexRankFile(const std::filesystem::path& bundleDir, const Manifest& manifest,
                            const RankEntry& entry, Diagnostics& out) {
    RankFileIndex index;
    const auto file = bundleDir / entry.file;
    const auto loc = where(file, entry.rank);
    if (!fileLooksIntact(file, manifest, entry, loc, out)) {
        return index;
    }
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    const auto fileBytes = ec ? std::int64_t{0} : static_cast<std::int64_t>(size);
    // libhdf5 parses the file in a child process (corrupt metadata can crash or hang it), once
    // per file while the file is unchanged.
    auto isolated = indexReusingCache(file, fileBytes);
    if (!isolated.facts) {
        out.push_back(makeError(isolated.code, loc, isolated.message));
        return index;
    }
    const auto& facts = *isolated.facts;
    if (!facts.opened) {
        out.push_back(makeError(DiagnosticCode::DamagedFile, loc,
                                entry.file + " cannot be opened by HDF5 (" + facts.openError +
                                    "); the file is truncated or damaged, copy it again"));
        return index;
    }
    if (!rootMatches(facts.rootAttrs, manifest, entry, loc, out)) {
        return index;
    }
    indexDatasets(file, entry.rank, facts, fileBytes, index, out);
    if (facts.walkFailed) {
        out.push_back(makeError(DiagnosticCode::DamagedFile, loc,
                                "walking the file failed (" + facts.walkError +
                                    "); the file is truncated or damaged"));
    }
    checkCounts(entry, index, loc, out);
    dropDuplicates(file, entry.rank, index, out);
    index.usable = true;
    return index;
}

} // namespace ttrace
