#pragma once
// Structure-aware edits of a real rank file, decoded from a fuzzer input: attributes set to
// other values, types and dataspaces, deleted, datasets given another storage type or shape,
// datasets linked or copied twice. The file stays valid HDF5, so every input reaches the
// core's attribute and dataspace checks instead of stopping in HDF5's own parser.
//
// Input: up to kMaxEdits edits, each a u8 kind followed by its fields (see applyEdit and
// make_seeds.py, which writes the same layout).
#include "byte_reader.h"

#include <hdf5.h>

#include <string>
#include <vector>

namespace ttrace::fuzz {

inline constexpr int kMaxEdits = 8;

enum class EditKind : std::uint8_t { SetString, SetInts, SetFloat, Delete, Reshape, Duplicate };
inline constexpr int kEditKinds = 6;

// Applies the edits in `in` to the open file; `datasets` are its dataset paths (the targets).
void applyEdits(hid_t file, const std::vector<std::string>& datasets, ByteReader& in);

// Every dataset path in the file, in HDF5's name order (the order make_seeds.py assumes).
std::vector<std::string> datasetPaths(hid_t file);

} // namespace ttrace::fuzz
