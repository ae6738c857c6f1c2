#include "rank_file_edits.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace ttrace::fuzz {
namespace {

// Attribute names the format defines (docs/bundle-format.md); a name byte past the list reads
// a fuzzed name instead.
constexpr std::array<const char*, 21> kNames = {
    "dtype",         "variant",     "module",         "kind",      "index",
    "iteration",     "micro_batch", "global_shape",   "placement", "combine",
    "partial_index", "boxes",       "flat_ranges",    "is_scalar", "layout_note",
    "annotate_hint", "format",      "format_version", "rank",      "world_size",
    "role"};

// Owns one hid_t and closes it with the matching H5*close.
template <herr_t (*Close)(hid_t)> struct Id {
    hid_t id;
    explicit Id(hid_t value)
        : id(value) {}
    ~Id() {
        if (id >= 0) {
            Close(id);
        }
    }
    Id(const Id&) = delete;
    Id& operator=(const Id&) = delete;
};

std::string target(const std::vector<std::string>& datasets, ByteReader& in) {
    const std::size_t pick = in.u8() % (datasets.size() + 1);
    return pick < datasets.size() ? datasets[pick] : std::string("/");
}

std::string attributeName(ByteReader& in) {
    const std::size_t pick = in.u8();
    if (pick < kNames.size()) {
        return kNames[pick];
    }
    const auto name = in.str();
    return name.empty() || name.find('\0') != std::string::npos ? "x" : name;
}

// Replaces attribute `name` of `path` with one of `type` over `space`, holding `buffer`.
void writeAttribute(hid_t file, const std::string& path, const std::string& name, hid_t type,
                    hid_t space, const void* buffer) {
    const Id<H5Oclose> object(H5Oopen(file, path.c_str(), H5P_DEFAULT));
    if (object.id < 0) {
        return;
    }
    if (H5Aexists(object.id, name.c_str()) > 0) {
        H5Adelete(object.id, name.c_str());
    }
    const Id<H5Aclose> attr(
        H5Acreate2(object.id, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT));
    if (attr.id >= 0 && buffer != nullptr) {
        H5Awrite(attr.id, type, buffer);
    }
}

// Scalar, 1-D to 3-D (dims 0..7 each) or null dataspace.
hid_t makeSpace(ByteReader& in, hsize_t& points) {
    const int form = in.u8() % 5;
    if (form == 0) {
        points = 1;
        return H5Screate(H5S_SCALAR);
    }
    if (form == 4) {
        points = 0;
        return H5Screate(H5S_NULL);
    }
    std::array<hsize_t, 3> dims{};
    points = 1;
    for (int d = 0; d < form; ++d) {
        dims[static_cast<std::size_t>(d)] = in.u8() % 8;
        points *= dims[static_cast<std::size_t>(d)];
    }
    return H5Screate_simple(form, dims.data(), nullptr);
}

void setString(hid_t file, const std::string& path, const std::string& name, ByteReader& in) {
    const bool variable = in.u8() % 2 != 0;
    hsize_t points = 0;
    const Id<H5Sclose> space(makeSpace(in, points));
    const std::string value = in.str();
    const Id<H5Tclose> type(H5Tcopy(H5T_C_S1));
    if (variable) {
        H5Tset_size(type.id, H5T_VARIABLE);
        std::vector<const char*> pointers(points, value.c_str());
        writeAttribute(file, path, name, type.id, space.id, points ? pointers.data() : nullptr);
        return;
    }
    const std::size_t width = std::max<std::size_t>(value.size(), 1);
    H5Tset_size(type.id, width);
    std::string buffer;
    for (hsize_t i = 0; i < points; ++i) {
        buffer += value + std::string(width - value.size(), '\0');
    }
    writeAttribute(file, path, name, type.id, space.id, points ? buffer.data() : nullptr);
}

void setInts(hid_t file, const std::string& path, const std::string& name, ByteReader& in) {
    static const std::array<hid_t, 6> kTypes = {H5T_STD_I8LE,  H5T_STD_I16LE, H5T_STD_I32LE,
                                                H5T_STD_I64LE, H5T_STD_U64LE, H5T_STD_I64BE};
    const hid_t fileType = kTypes[in.u8() % kTypes.size()];
    hsize_t points = 0;
    const Id<H5Sclose> space(makeSpace(in, points));
    const auto given = in.i64s(64);
    std::vector<std::int64_t> values(points, 0);
    for (std::size_t i = 0; i < values.size() && !given.empty(); ++i) {
        values[i] = given[i % given.size()];
    }
    // Written from int64: HDF5 converts to the file type (clamping, as a narrow writer would).
    const Id<H5Oclose> object(H5Oopen(file, path.c_str(), H5P_DEFAULT));
    if (object.id < 0) {
        return;
    }
    if (H5Aexists(object.id, name.c_str()) > 0) {
        H5Adelete(object.id, name.c_str());
    }
    const Id<H5Aclose> attr(
        H5Acreate2(object.id, name.c_str(), fileType, space.id, H5P_DEFAULT, H5P_DEFAULT));
    if (attr.id >= 0 && points > 0) {
        H5Awrite(attr.id, H5T_NATIVE_INT64, values.data());
    }
}

void setFloat(hid_t file, const std::string& path, const std::string& name, ByteReader& in) {
    const auto bits = in.i64();
    double value = 0;
    static_assert(sizeof value == sizeof bits);
    __builtin_memcpy(&value, &bits, sizeof value);
    const Id<H5Sclose> space(H5Screate(H5S_SCALAR));
    writeAttribute(file, path, name, H5T_NATIVE_DOUBLE, space.id, &value);
}

struct SavedAttribute {
    std::string name;
    hid_t type;
    hid_t space;
    std::vector<unsigned char> bytes;
};

herr_t saveAttribute(hid_t object, const char* name, const H5A_info_t*, void* data) {
    auto& saved = *static_cast<std::vector<SavedAttribute>*>(data);
    const Id<H5Aclose> attr(H5Aopen(object, name, H5P_DEFAULT));
    SavedAttribute a{name, H5Aget_type(attr.id), H5Aget_space(attr.id), {}};
    const auto points = std::max<hssize_t>(H5Sget_simple_extent_npoints(a.space), 0);
    a.bytes.resize(static_cast<std::size_t>(points) * H5Tget_size(a.type) + 1);
    H5Aread(attr.id, a.type, a.bytes.data());
    saved.push_back(std::move(a));
    return 0;
}

// Recreates dataset `path` with another storage type and shape, keeping its attributes.
// Data is written only when small: a large declared shape over unwritten storage is exactly
// what a hostile file looks like.
void reshape(hid_t file, const std::string& path, ByteReader& in) {
    static const std::array<hid_t, 7> kTypes = {H5T_IEEE_F32LE, H5T_IEEE_F64LE, H5T_STD_U16LE,
                                                H5T_STD_I64LE,  H5T_STD_U8LE,   H5T_STD_I32LE,
                                                H5T_STD_I16BE};
    const hid_t type = kTypes[in.u8() % kTypes.size()];
    const int ndim = in.u8() % 4;
    std::array<hsize_t, 3> dims{};
    hsize_t points = 1;
    for (int d = 0; d < ndim; ++d) {
        dims[static_cast<std::size_t>(d)] = in.u16();
        points *= dims[static_cast<std::size_t>(d)];
    }
    const bool writeData = in.u8() % 2 != 0 && points <= 4096;
    std::vector<SavedAttribute> saved;
    {
        const Id<H5Dclose> old(H5Dopen2(file, path.c_str(), H5P_DEFAULT));
        if (old.id < 0) {
            return;
        }
        H5Aiterate2(old.id, H5_INDEX_NAME, H5_ITER_INC, nullptr, saveAttribute, &saved);
    }
    H5Ldelete(file, path.c_str(), H5P_DEFAULT);
    const Id<H5Sclose> space(ndim == 0 ? H5Screate(H5S_SCALAR)
                                       : H5Screate_simple(ndim, dims.data(), nullptr));
    const Id<H5Dclose> fresh(
        H5Dcreate2(file, path.c_str(), type, space.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (fresh.id >= 0 && writeData) {
        const std::vector<double> zeros(points, 0.25);
        H5Dwrite(fresh.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
    }
    for (auto& a : saved) {
        if (fresh.id >= 0) {
            const Id<H5Aclose> attr(
                H5Acreate2(fresh.id, a.name.c_str(), a.type, a.space, H5P_DEFAULT, H5P_DEFAULT));
            H5Awrite(attr.id, a.type, a.bytes.data());
        }
        H5Dvlen_reclaim(a.type, a.space, H5P_DEFAULT, a.bytes.data());
        H5Tclose(a.type);
        H5Sclose(a.space);
    }
}

// Whether the dataset keeps its attributes in dense storage (more than its compact maximum):
// libhdf5 1.10's H5Ocopy of such a dataset with a variable-length attribute calls through a
// null pointer (H5A__dense_post_copy_file_all -> H5T__conv_vlen). That is the editing tool's
// crash, not the reader's: the product never copies objects.
bool denseAttributes(hid_t file, const std::string& path) {
    const hid_t dataset = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
    if (dataset < 0) {
        return false;
    }
    const hid_t plist = H5Dget_create_plist(dataset);
    unsigned maxCompact = 8;
    unsigned minDense = 6;
    H5Pget_attr_phase_change(plist, &maxCompact, &minDense);
    H5O_info_t info{};
    const bool dense =
        H5Oget_info2(dataset, &info, H5O_INFO_NUM_ATTRS) >= 0 && info.num_attrs > maxCompact;
    H5Pclose(plist);
    H5Dclose(dataset);
    return dense;
}

// The same dataset under a second name: a hard link (one object twice) or a copy.
void duplicate(hid_t file, const std::string& path, ByteReader& in) {
    const bool hardLink = in.u8() % 2 != 0 || denseAttributes(file, path);
    const std::string copy = path + (hardLink ? "_link" : "_copy");
    if (hardLink) {
        H5Lcreate_hard(file, path.c_str(), file, copy.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    } else {
        H5Ocopy(file, path.c_str(), file, copy.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    }
}

void applyEdit(hid_t file, const std::vector<std::string>& datasets, ByteReader& in) {
    const auto kind = static_cast<EditKind>(in.u8() % kEditKinds);
    const std::string path = target(datasets, in);
    switch (kind) {
    case EditKind::SetString: setString(file, path, attributeName(in), in); break;
    case EditKind::SetInts: setInts(file, path, attributeName(in), in); break;
    case EditKind::SetFloat: setFloat(file, path, attributeName(in), in); break;
    case EditKind::Delete: {
        const auto name = attributeName(in);
        H5Adelete_by_name(file, path.c_str(), name.c_str(), H5P_DEFAULT);
        break;
    }
    case EditKind::Reshape:
        if (path != "/") {
            reshape(file, path, in);
        }
        break;
    case EditKind::Duplicate:
        if (path != "/") {
            duplicate(file, path, in);
        }
        break;
    }
}

} // namespace

void applyEdits(hid_t file, const std::vector<std::string>& datasets, ByteReader& in) {
    for (int i = 0; i < kMaxEdits && !in.empty(); ++i) {
        applyEdit(file, datasets, in);
    }
}

std::vector<std::string> datasetPaths(hid_t file) {
    std::vector<std::string> paths;
    H5Ovisit2(
        file, H5_INDEX_NAME, H5_ITER_INC,
        [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
            if (info->type == H5O_TYPE_DATASET) {
                static_cast<std::vector<std::string>*>(data)->push_back(std::string("/") + name);
            }
            return 0;
        },
        &paths, H5O_INFO_BASIC);
    return paths;
}

} // namespace ttrace::fuzz
