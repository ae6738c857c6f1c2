#include "io/rank_file_reader.h"

#include "io/unique_fd.h"

#include "ttrace/io/bundle_error.h"
#include "ttrace/io/checked_math.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace ttrace {
namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& why) {
    throw BundleError(file.string() + ": " + why);
}

} // namespace

void readRankFileBytes(const std::filesystem::path& file, std::int64_t offset,
                       std::span<std::byte> out) {
    // O_NONBLOCK: a rank file swapped for a FIFO since opening must not block the open.
    const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) {
        fail(file, std::string("cannot reopen the rank file: ") + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        fail(file, "is no longer a regular file");
    }
    const auto size = static_cast<std::int64_t>(out.size());
    if (!fitsWithin(offset, size, static_cast<std::int64_t>(st.st_size))) {
        fail(file, "is shorter than when it was opened (data at offset " + std::to_string(offset) +
                       " + " + std::to_string(size) + " bytes is past its end)");
    }
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::pread(fd.get(), out.data() + done, out.size() - done,
                                  static_cast<off_t>(offset) + static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fail(file, std::string("reading failed: ") +
                           (n < 0 ? std::strerror(errno) : "unexpected end of file"));
        }
        done += static_cast<std::size_t>(n);
    }
}

} // namespace ttrace
