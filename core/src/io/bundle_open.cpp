// openBundle: manifest, then every rank file, then cross-rank consistency of each tensor.
#include "io/bundle_index.h"
#include "io/shard_index.h"
#include "io/utf8.h"
#include "ttrace/io/bundle.h"
#include "ttrace/io/capture_status.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <string>

namespace ttrace {
namespace {

std::string rankList(const std::vector<ShardRef>& shards) {
    std::string out;
    for (const auto& s : shards) {
        out += (out.empty() ? "" : ", ") + std::to_string(s.rank);
    }
    return out;
}

// Every shard of one tensor must agree on what the logical tensor is.
void checkConsistency(const TensorId& id, const std::vector<ShardRef>& shards, Diagnostics& out) {
    const auto& first = shards.front();
    for (const auto& s : shards) {
        const auto loc = "tensor " + id.path();
        if (s.placement.globalShape != first.placement.globalShape) {
            out.push_back(makeError(DiagnosticCode::ShapeMismatch, loc,
                                    "rank " + std::to_string(s.rank) + " says global_shape " +
                                        shapeToString(s.placement.globalShape) + ", rank " +
                                        std::to_string(first.rank) + " says " +
                                        shapeToString(first.placement.globalShape)));
            return;
        }
        if (s.dtype != first.dtype) {
            out.push_back(makeError(DiagnosticCode::DtypeMismatch, loc,
                                    "rank " + std::to_string(s.rank) + " stores " +
                                        std::string(dtypeName(s.dtype)) + ", rank " +
                                        std::to_string(first.rank) + " stores " +
                                        std::string(dtypeName(first.dtype))));
            return;
        }
        if (s.placement.combine != first.placement.combine) {
            out.push_back(makeError(DiagnosticCode::CombineMismatch, loc,
                                    "shards on ranks " + rankList(shards) +
                                        " declare different combine modes"));
            return;
        }
    }
}

// rank-NNNNN.h5 files in the directory that the manifest does not list: a rank file of another
// capture (a larger world size) or a manifest that lost entries; either way the bundle is not
// what the manifest says.
void checkUnlistedRankFiles(const std::filesystem::path& dir, const Manifest& manifest,
                            Diagnostics& out) {
    if (manifest.ranks.size() != static_cast<std::size_t>(manifest.worldSize)) {
        return; // entries were rejected: their files are reported as missing ranks already
    }
    std::set<std::string> listed;
    for (const auto& e : manifest.ranks) {
        listed.insert(e.file);
    }
    std::error_code ec;
    std::set<std::string> unlisted;
    for (const auto& item : std::filesystem::directory_iterator(dir, ec)) {
        const auto name = item.path().filename().string();
        if (name.starts_with("rank-") && name.ends_with(".h5") && !listed.contains(name)) {
            unlisted.insert(name);
        }
    }
    for (const auto& name : unlisted) {
        out.push_back(makeError(DiagnosticCode::UnlistedRankFile, (dir / name).string(),
                                escapeInvalidUtf8(name) +
                                    " is in the bundle but manifest.json does not list it (left "
                                    "over from another capture, or the manifest lost a rank?)"));
    }
}

// Tensors whose module the manifest does not list: a warning each, or one error when the
// manifest lists no modules at all (no depths, so no derived tolerances).
void checkModules(const std::filesystem::path& dir, const Manifest& manifest,
                  const Bundle::TensorIndex& index, Diagnostics& out) {
    std::set<std::string> unknownModules;
    for (const auto& [id, shards] : index) {
        if (!manifest.findModule(id.module)) {
            unknownModules.insert(id.module);
        }
    }
    const auto where = (dir / "manifest.json").string();
    if (manifest.unfinished) {
        return; // an unfinished capture has no module table yet; the reference's is used
    }
    if (manifest.modules.empty() && !index.empty()) {
        out.push_back(makeError(DiagnosticCode::MissingModules, where,
                                "manifest.json lists no modules, but the rank files hold "
                                "tensors of " +
                                    std::to_string(unknownModules.size()) +
                                    " modules (their depths, which set the tolerances, are "
                                    "unknown)"));
        return;
    }
    for (const auto& m : unknownModules) {
        out.push_back(makeWarning(DiagnosticCode::UnknownModule, where,
                                  "module '" + m +
                                      "' has tensors but is not in the manifest's module list "
                                      "(its depth is unknown)"));
    }
}

} // namespace

namespace {

struct RankResult {
    RankFileIndex index;
    Diagnostics diagnostics;
};

// Every rank file indexed (or none, with `cancelled`), one result per manifest entry.
std::vector<RankResult> indexRankFiles(const std::filesystem::path& dir, const Manifest& manifest,
                                       const ProgressFn& progress, bool& cancelled) {
    const auto total = manifest.ranks.size();
    std::vector<RankResult> results(total);
    std::mutex progressMutex; // callers' progress functions need not be thread-safe
    std::size_t started = 0;
    std::atomic<bool> stop{false};
    // One task per rank file on oneTBB's threads: each reads its file's CRC-32 (itself split
    // into parallel pieces) and waits on its indexer child, unless the rank-file cache answers.
    tbb::parallel_for(std::size_t{0}, total, std::size_t{1}, [&](std::size_t i) {
        if (progress) {
            const std::lock_guard lock(progressMutex);
            if (stop || !progress(static_cast<double>(started++) / static_cast<double>(total),
                                  "indexing " + manifest.ranks[i].file)) {
                stop = true;
                return;
            }
        }
        auto& r = results[i];
        r.index = indexRankFile(dir, manifest, manifest.ranks[i], r.diagnostics);
    });
    cancelled = stop;
    return results;
}

} // namespace

void indexBundle(const std::filesystem::path& dir, Manifest manifest, const ProgressFn& progress,
                 const TensorFilter& keep, BundleOpenResult& result, std::size_t& leftOut) {
    Bundle::TensorIndex index;
    auto ranks = indexRankFiles(dir, manifest, progress, result.cancelled);
    if (result.cancelled) {
        return;
    }
    // In rank order, so diagnostics and shard order do not depend on timing.
    for (auto& rank : ranks) {
        result.diagnostics.insert(result.diagnostics.end(), rank.diagnostics.begin(),
                                  rank.diagnostics.end());
        for (auto& item : rank.index.shards) {
            index[item.id].push_back(std::move(item.shard));
        }
    }
    if (keep) {
        std::erase_if(index, [&](const auto& item) { return !keep(item.first) && ++leftOut; });
    }
    for (const auto& [id, shards] : index) {
        checkConsistency(id, shards, result.diagnostics);
    }
    checkModules(dir, manifest, index, result.diagnostics);
    checkUnlistedRankFiles(dir, manifest, result.diagnostics);
    if (progress) {
        progress(1.0, "indexed");
    }
    result.bundle = std::make_shared<const Bundle>(dir, std::move(manifest), std::move(index));
}

BundleOpenResult openBundle(const std::filesystem::path& dir, const ProgressFn& progress) {
    BundleOpenResult result;
    if (isUnfinishedCapture(dir)) {
        // Not "is this a trace bundle?": say which rank stopped where.
        if (const auto status = readCaptureStatus(dir, result.diagnostics)) {
            describeUnfinishedCapture(dir, *status, Severity::Error, result.diagnostics);
        }
        return result;
    }
    auto manifest = readManifest(dir, result.diagnostics);
    if (!manifest) {
        return result;
    }
    std::size_t leftOut = 0;
    indexBundle(dir, std::move(*manifest), progress, {}, result, leftOut);
    return result;
}

} // namespace ttrace
