#pragma once
// The part of opening a bundle that follows its manifest: index every rank file, check each
// tensor's shards agree. Shared by openBundle and the opening of an unfinished capture.
#include "ttrace/io/bundle.h"

#include <functional>

namespace ttrace {

using TensorFilter = std::function<bool(const TensorId&)>;

// Fills `result` (bundle, diagnostics, cancelled) from an already read manifest; tensors
// `keep` rejects are left out of the index and counted in `leftOut`.
void indexBundle(const std::filesystem::path& dir, Manifest manifest, const ProgressFn& progress,
                 const TensorFilter& keep, BundleOpenResult& result, std::size_t& leftOut);

} // namespace ttrace
