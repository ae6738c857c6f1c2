#pragma once
// What a front end does with a bundle: open it (manifest, every rank file indexed), then
// merge every tensor. Shared by the rank-file fuzz targets.
#include "ttrace/io/bundle.h"
#include "ttrace/io/bundle_error.h"
#include "ttrace/merge/merge.h"

#include <cstdint>
#include <filesystem>

namespace ttrace::fuzz {

// Tensors are merged only up to this many elements (global and per shard). Larger declared
// sizes are bounded against the file's real size by the hostile-bundle checks; the fuzzer
// looks for memory errors and wrong indexing, not for allocations the file asks for.
inline constexpr std::int64_t kMergeLimit = std::int64_t{1} << 20;

inline bool mergeable(const std::vector<ShardRef>& shards) {
    for (const auto& s : shards) {
        if (s.elements() > kMergeLimit || elementCount(s.placement.globalShape) > kMergeLimit) {
            return false;
        }
    }
    return true;
}

inline void probeBundle(const std::filesystem::path& dir) {
    const auto opened = openBundle(dir);
    if (!opened.bundle) {
        if (!hasErrors(opened.diagnostics)) {
            __builtin_trap(); // a bundle that cannot be used must say why
        }
        return;
    }
    for (const auto& [id, shards] : opened.bundle->tensors()) {
        if (shards.empty()) {
            __builtin_trap(); // the index never holds a tensor without shards
        }
        if (!mergeable(shards)) {
            continue;
        }
        try {
            const auto merged = mergeTensor(*opened.bundle, id);
            if (merged.tensor && static_cast<std::int64_t>(merged.tensor->values.size()) !=
                                     elementCount(merged.tensor->shape)) {
                __builtin_trap();
            }
        } catch (const BundleError&) {
            // A dataset HDF5 cannot read: reported to the user, as documented.
        }
    }
}

} // namespace ttrace::fuzz
