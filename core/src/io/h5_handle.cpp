#include "io/h5_handle.h"

#include "io/utf8.h"

#include <cstring>
#include <fstream>

namespace ttrace::h5 {

void silenceErrorPrinting() {
    static std::once_flag once;
    std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

std::string lastErrorMessage() {
    std::string message;
    H5Ewalk2(
        H5E_DEFAULT, H5E_WALK_UPWARD,
        [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
            // Upward walk starts at the innermost frame: that message is the specific one.
            if (n == 0 && err && err->desc) {
                *static_cast<std::string*>(data) = err->desc;
            }
            return 0;
        },
        &message);
    H5Eclear2(H5E_DEFAULT);
    return message;
}

std::mutex& apiMutex() {
    static std::mutex mutex;
    return mutex;
}

SignatureCheck checkSignature(const std::string& path) {
    // HDF5's superblock signature may sit at offset 0, 512, 1024, ...; our writer uses 0,
    // but accept the others like H5Fis_hdf5 does.
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return SignatureCheck::Unreadable;
    }
    static constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    for (std::streamoff offset = 0; offset <= 8192; offset = offset == 0 ? 512 : offset * 2) {
        char buf[8] = {};
        in.clear();
        in.seekg(offset);
        if (!in.read(buf, 8)) {
            break;
        }
        if (std::equal(buf, buf + 8, kSignature)) {
            return SignatureCheck::IsHdf5;
        }
    }
    return SignatureCheck::NotHdf5;
}

namespace {

// Opens attribute `name` of `object` if it exists and its type is of class `cls`; otherwise
// returns an invalid handle. A missing or mistyped attribute is not an HDF5 error for us.
Attribute openAttr(hid_t object, const char* name, H5T_class_t cls, Datatype& type) {
    if (H5Aexists(object, name) <= 0) {
        return {};
    }
    Attribute attr(H5Aopen(object, name, H5P_DEFAULT));
    if (!attr) {
        return {};
    }
    type = Datatype(H5Aget_type(attr.get()));
    if (H5Tget_class(type.get()) != cls) {
        return {};
    }
    return attr;
}

} // namespace

namespace {

// Attributes hold one value (a scalar or a one-element array); anything else is not ours. A
// string attribute stored as an array was once copied whole into a one-value buffer.
bool holdsOneValue(hid_t attr) {
    Dataspace space(H5Aget_space(attr));
    return space && H5Sget_simple_extent_npoints(space.get()) == 1;
}

// Longest string attribute we read: names and notes, never data.
constexpr std::size_t kMaxStringAttr = std::size_t{1} << 20;

std::optional<std::string> readVariableString(hid_t attr, hid_t type) {
    Datatype mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type));
    char* raw = nullptr;
    if (H5Aread(attr, mem.get(), &raw) < 0 || raw == nullptr) {
        return std::nullopt;
    }
    std::string value(raw, strnlen(raw, kMaxStringAttr));
    Dataspace space(H5Aget_space(attr));
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, &raw);
    return value;
}

std::optional<std::string> readFixedString(hid_t attr, hid_t type) {
    const std::size_t size = H5Tget_size(type);
    if (size == 0 || size > kMaxStringAttr) {
        return std::nullopt;
    }
    // Read through a memory type of the same size and padding: one element, `size` bytes.
    Datatype mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), size);
    H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
    std::string value(size, '\0');
    if (H5Aread(attr, mem.get(), value.data()) < 0) {
        return std::nullopt;
    }
    // Fixed-length strings are padded with NULs or spaces.
    const auto end = value.find('\0');
    if (end != std::string::npos) {
        value.resize(end);
    }
    return value;
}

} // namespace

bool hasAttr(hid_t object, const char* name) {
    return H5Aexists(object, name) > 0;
}

std::optional<std::string> readStringAttr(hid_t object, const char* name) {
    Datatype type;
    const Attribute attr = openAttr(object, name, H5T_STRING, type);
    if (!attr || !holdsOneValue(attr.get())) {
        return std::nullopt;
    }
    auto value = H5Tis_variable_str(type.get()) > 0 ? readVariableString(attr.get(), type.get())
                                                    : readFixedString(attr.get(), type.get());
    if (!value) {
        return std::nullopt;
    }
    return escapeInvalidUtf8(*value);
}

std::optional<IntArray> readIntArrayAttr(hid_t object, const char* name) {
    Datatype type;
    const Attribute attr = openAttr(object, name, H5T_INTEGER, type);
    if (!attr) {
        return std::nullopt;
    }
    Dataspace space(H5Aget_space(attr.get()));
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 2) {
        return std::nullopt;
    }
    IntArray out;
    hsize_t dims[2] = {1, 1};
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    for (int i = 0; i < rank; ++i) {
        out.dims.push_back(static_cast<std::int64_t>(dims[i]));
    }
    const auto points = H5Sget_simple_extent_npoints(space.get());
    if (points < 0 || points > kMaxIntArrayAttr) {
        return std::nullopt;
    }
    out.values.resize(static_cast<std::size_t>(points));
    if (points > 0 && H5Aread(attr.get(), H5T_NATIVE_INT64, out.values.data()) < 0) {
        return std::nullopt;
    }
    return out;
}

std::optional<std::int64_t> readIntAttr(hid_t object, const char* name) {
    auto array = readIntArrayAttr(object, name);
    if (!array || array->values.size() != 1) {
        return std::nullopt;
    }
    return array->values.front();
}

} // namespace ttrace::h5
