#include "io/regular_file.h"

#include "io/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ttrace {
namespace {

FileKind kindOf(const struct stat& st) {
    if (S_ISREG(st.st_mode)) {
        return FileKind::Regular;
    }
    if (S_ISDIR(st.st_mode)) {
        return FileKind::Directory;
    }
    if (S_ISFIFO(st.st_mode)) {
        return FileKind::Fifo;
    }
    return FileKind::Other;
}

} // namespace

FileKind fileKind(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        return FileKind::Missing;
    }
    return kindOf(st);
}

const char* fileKindName(FileKind kind) {
    switch (kind) {
    case FileKind::Missing: return "missing";
    case FileKind::Regular: return "a regular file";
    case FileKind::Directory: return "a directory";
    case FileKind::Fifo: return "a FIFO (named pipe)";
    case FileKind::Other: return "a device or socket";
    }
    return "not a regular file";
}

SmallFile readSmallFile(const std::filesystem::path& path, std::int64_t maxBytes) {
    SmallFile out;
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) {
        out.error = std::strerror(errno);
        return out;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        out.error = std::strerror(errno);
        return out;
    }
    if (kindOf(st) != FileKind::Regular) {
        out.error = std::string("is ") + fileKindName(kindOf(st)) + ", not a regular file";
        return out;
    }
    if (st.st_size > maxBytes) {
        out.error = "is " + std::to_string(st.st_size) + " bytes, more than the " +
                    std::to_string(maxBytes) + " a manifest may have";
        return out;
    }
    out.text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < out.text.size()) {
        const auto got = ::read(fd.get(), out.text.data() + done, out.text.size() - done);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break; // shrank while reading: parse what is there, the parser will complain
        }
        done += static_cast<std::size_t>(got);
    }
    out.text.resize(done);
    return out;
}

} // namespace ttrace
