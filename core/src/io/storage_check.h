#pragma once
// Where a dataset's bytes really are. A hostile rank file can declare a dataset of 2^28
// elements that stores nothing (HDF5 then reads fill values: gigabytes from a kilobyte file),
// point into other files (external storage, virtual datasets), or lie past the file's end.
#include "io/rank_facts.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ttrace {

// Most a filtered (compressed) dataset may expand: beyond it the "data" is a fill pattern.
inline constexpr std::int64_t kMaxCompressionRatio = 1024;

// Why the dataset cannot hold `declaredBytes` of data inside a file of `fileBytes`, or
// nothing.
std::optional<std::string> storageProblem(const DatasetFacts& dataset, std::int64_t declaredBytes,
                                          std::int64_t fileBytes);

} // namespace ttrace
