// Opening rank files read-only on any file system, network ones included (see h5_handle.h).
#include "io/h5_handle.h"
#include "io/unique_fd.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>

namespace ttrace::h5 {
namespace {

// Whether the file system holding `path` refuses flock (not: someone else holds a lock).
bool locksRefused(const std::string& path) {
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        return false; // HDF5's own open reports why
    }
    if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) {
        ::flock(fd.get(), LOCK_UN);
        return false;
    }
    return errno == ENOLCK || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL;
}

} // namespace

File openReadOnly(const std::string& path) {
    const PropList fapl(H5Pcreate(H5P_FILE_ACCESS));
#if H5_VERSION_GE(1, 10, 7)
    // Best effort: HDF5 then ignores ENOSYS (Lustre without flock); where locks are refused
    // otherwise (NFS without its lock daemon: ENOLCK) a reader goes without, since it never
    // needs one. HDF5_USE_FILE_LOCKING, when set, overrides both (HDF5 reads it itself).
    H5Pset_file_locking(fapl.get(), locksRefused(path) ? 0 : 1, 1);
#endif
    return File(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
}

} // namespace ttrace::h5
