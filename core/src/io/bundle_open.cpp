// openBundle: manifest, then every rank file, then cross-rank consistency of each tensor.
#include "io/bundle_index.h"
#include "io/shard_index.h"
#include "ttrace/bundle.h"
#include "ttrace/capture_status.h"

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
            out.push_back(makeError("shape-mismatch", loc,
                                    "rank " + std::to_string(s.rank) + " says global_shape " +
                                        shapeToString(s.placement.globalShape) + ", rank " +
                                        std::to_string(first.rank) + " says " +
                                        shapeToString(first.placement.globalShape)));
            return;
        }
        if (s.dtype != first.dtype) {
            out.push_back(makeError("dtype-mismatch", loc,
                                    "rank " + std::to_string(s.rank) + " stores " +
                                        std::string(dtypeName(s.dtype)) + ", rank " +
                                        std::to_string(first.rank) + " stores " +
                                        std::string(dtypeName(first.dtype))));
            return;
        }
        if (s.placement.combine != first.placement.combine) {
            out.push_back(makeError("combine-mismatch", loc,
                                    "shards on ranks " + rankList(shards) +
                                        " declare different combine modes"));
            return;
        }
    }
}

} // namespace

void indexBundle(const std::filesystem::path& dir, Manifest manifest, const ProgressFn& progress,
                 const TensorFilter& keep, BundleOpenResult& result, std::size_t& leftOut) {
    Bundle::TensorIndex index;
    const auto total = manifest.ranks.size();
    for (std::size_t i = 0; i < total; ++i) {
        const auto& entry = manifest.ranks[i];
        if (progress && !progress(static_cast<double>(i) / static_cast<double>(total),
                                  "indexing " + entry.file)) {
            result.cancelled = true;
            return;
        }
        auto rankIndex = indexRankFile(dir, manifest, entry, result.diagnostics);
        for (auto& item : rankIndex.shards) {
            index[item.id].push_back(std::move(item.shard));
        }
    }
    if (keep) {
        std::erase_if(index, [&](const auto& item) { return !keep(item.first) && ++leftOut; });
    }
    for (const auto& [id, shards] : index) {
        checkConsistency(id, shards, result.diagnostics);
    }
    std::set<std::string> unknownModules;
    for (const auto& [id, shards] : index) {
        if (!manifest.modules.empty() && !manifest.findModule(id.module)) {
            unknownModules.insert(id.module);
        }
    }
    for (const auto& m : unknownModules) {
        result.diagnostics.push_back(makeWarning("unknown-module", (dir / "manifest.json").string(),
                                                 "module '" + m +
                                                     "' has tensors but is not in the manifest's "
                                                     "module list (its depth is unknown)"));
    }
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
