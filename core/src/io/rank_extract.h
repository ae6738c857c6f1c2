#pragma once
// libhdf5 -> RankFacts. Runs in the ttrace-index child: corrupt metadata may crash or hang
// libhdf5 here, which is why the tools never call it on an untrusted file themselves.
#include "io/rank_facts.h"

#include <hdf5.h>

#include <filesystem>

namespace ttrace {

// Opens `file` read-only and extracts its root attributes and every dataset's facts.
// Caller holds the HDF5 API mutex.
RankFacts extractRankFacts(const std::filesystem::path& file);

// One dataset's facts (`name` relative to the file's root). Caller holds the HDF5 API mutex.
DatasetFacts extractDatasetFacts(hid_t file, const char* name);

// The attributes in `names` that `object` has, read as a string and as an integer array.
std::vector<AttrFact> extractAttrs(hid_t object, const std::vector<const char*>& names);

} // namespace ttrace
