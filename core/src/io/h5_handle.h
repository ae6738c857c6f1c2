#pragma once
// Small RAII wrappers over the HDF5 C API (private to core). Every hid_t we open is owned by
// exactly one H5Handle, so early returns on bad input never leak file handles.
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ttrace::h5 {

template <herr_t (*Close)(hid_t)> class Handle {
public:
    Handle() = default;
    explicit Handle(hid_t id)
        : id_(id) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& other) noexcept
        : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
    Handle& operator=(Handle&& other) noexcept {
        if (this != &other) {
            reset();
            id_ = std::exchange(other.id_, H5I_INVALID_HID);
        }
        return *this;
    }
    ~Handle() { reset(); }

    [[nodiscard]] hid_t get() const { return id_; }
    [[nodiscard]] bool valid() const { return id_ >= 0; }
    explicit operator bool() const { return valid(); }

private:
    void reset() {
        if (id_ >= 0) {
            Close(id_);
            id_ = H5I_INVALID_HID;
        }
    }
    hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using Attribute = Handle<H5Aclose>;
using Group = Handle<H5Gclose>;
using PropList = Handle<H5Pclose>;

// Opens a rank file read-only. HDF5 locks every file it opens and fails where the file
// system has no locks (NFS, Lustre); a reader needs none, so a file system without them is
// no error here (h5_open.cpp). Never blocks: HDF5's lock does not wait.
File openReadOnly(const std::string& path);

// HDF5 prints its error stack to stderr by default; we turn that off once and turn the stack
// into a message instead.
void silenceErrorPrinting();
// The innermost (most specific) message of the current HDF5 error stack, or "".
std::string lastErrorMessage();

// HDF5 calls are serialized: Debian's build is thread-safe through a global lock anyway, and
// this keeps non-thread-safe builds correct.
std::mutex& apiMutex();

enum class SignatureCheck { IsHdf5, NotHdf5, Unreadable };
SignatureCheck checkSignature(const std::string& path);

// Whether the attribute exists at all (to tell "missing" from "of the wrong kind").
bool hasAttr(hid_t object, const char* name);
// A string attribute holding one string, however HDF5 stores it (fixed or variable length);
// invalid UTF-8 comes back escaped (\xNN). Nothing for an array of strings or another type.
std::optional<std::string> readStringAttr(hid_t object, const char* name);
std::optional<std::int64_t> readIntAttr(hid_t object, const char* name);
// Integer array attribute with its dimensions (1-D or 2-D).
struct IntArray {
    std::vector<std::int64_t> values;
    std::vector<std::int64_t> dims;
};
// At most this many values (boxes and flat ranges of one shard).
inline constexpr std::int64_t kMaxIntArrayAttr = std::int64_t{1} << 24;
std::optional<IntArray> readIntArrayAttr(hid_t object, const char* name);

} // namespace ttrace::h5
