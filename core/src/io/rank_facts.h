#pragma once
// What one rank file says about itself, as plain values: its root attributes and, per dataset,
// the storage type, stored shape, layout and the attributes the index needs. Extracted by
// libhdf5 in a child process (ttrace-index) and judged here without touching HDF5, so a rank
// file whose metadata crashes or hangs libhdf5 costs the child, never the tool.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

struct IntArrayFact {
    std::vector<std::int64_t> values;
    std::vector<std::int64_t> dims; // 1-D or 2-D (empty for a scalar)
};

// One attribute that exists. `text` is what a single-string read gives, `ints` what an
// integer-array read gives; at most one is set, neither for an attribute of another kind.
struct AttrFact {
    std::string name;
    std::optional<std::string> text;
    std::optional<IntArrayFact> ints;
};

enum class StorageClass : std::uint8_t { Other, Float, SignedInt, UnsignedInt, Enum };
enum class StoredLayout : std::uint8_t { Unreadable, Contiguous, Chunked, Compact, Other };
// The host type the file type equals bit for bit, if any: only then may raw bytes be read
// without HDF5's conversion (little-endian, no padding or odd precision).
enum class NativeType : std::uint8_t { None, Float64, Float32, UInt16, Int64, Int32, UInt8 };

struct DatasetFacts {
    std::string path; // "/name" as HDF5 names it (raw bytes)
    bool opened = false;
    std::string openError;
    StorageClass typeClass = StorageClass::Other;
    std::int64_t typeSize = 0;
    NativeType native = NativeType::None;
    int ndims = -1; // -1: the dataspace could not be read
    std::vector<std::uint64_t> dims;
    StoredLayout layout = StoredLayout::Unreadable;
    std::int64_t externalFiles = 0; // < 0: unreadable
    std::int32_t filters = 0;
    std::int64_t storedBytes = 0;
    std::optional<std::int64_t> offset; // contiguous data's file offset
    std::vector<AttrFact> attrs;
};

struct RankFacts {
    bool opened = false;
    std::string openError;
    std::vector<AttrFact> rootAttrs;
    std::vector<DatasetFacts> datasets;
    bool walkFailed = false;
    std::string walkError;
};

// The attribute named `name`, or null.
const AttrFact* findAttr(const std::vector<AttrFact>& attrs, const char* name);
// As h5::readStringAttr / readIntArrayAttr / readIntAttr / hasAttr would answer.
std::optional<std::string> factText(const std::vector<AttrFact>& attrs, const char* name);
std::optional<IntArrayFact> factInts(const std::vector<AttrFact>& attrs, const char* name);
std::optional<std::int64_t> factInt(const std::vector<AttrFact>& attrs, const char* name);
bool factHas(const std::vector<AttrFact>& attrs, const char* name);

// The attribute names the extractor reads (everything else in a file is ignored).
const std::vector<const char*>& rootAttrNames();
const std::vector<const char*>& datasetAttrNames();

} // namespace ttrace
