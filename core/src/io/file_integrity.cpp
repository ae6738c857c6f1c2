#include "io/file_integrity.h"
#include "io/regular_file.h"

#include <zlib.h>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

namespace ttrace {
namespace {

// What the kernel says about a file: inode, size, modification and change times. The change
// time (ctime) cannot be set by a user (os.utime restores mtime, not ctime), so a file whose
// stamp is unchanged has not been written since it was stamped.
struct FileStamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    long long mtimeNs = 0;
    long long ctimeNs = 0;
    bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stampOf(const std::filesystem::path& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
        return std::nullopt;
    }
    return FileStamp{st.st_dev, st.st_ino, st.st_size,
                     st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                     st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec};
}

// CRCs this process computed, so the summary cache's content check and the open's integrity
// check read each file once. Process-local only: nothing keyed by a stamp is ever persisted
// (the summary cache on disk is keyed by the CRCs themselves).
class CrcMemo {
public:
    std::optional<std::uint32_t> find(const std::string& path, const FileStamp& stamp) {
        const std::lock_guard lock(mutex_);
        const auto it = entries_.find(path);
        if (it == entries_.end() || !(it->second.first == stamp)) {
            return std::nullopt;
        }
        return it->second.second;
    }
    void store(const std::string& path, const FileStamp& stamp, std::uint32_t crc) {
        const std::lock_guard lock(mutex_);
        entries_[path] = {stamp, crc};
    }

private:
    std::mutex mutex_;
    std::map<std::string, std::pair<FileStamp, std::uint32_t>> entries_;
};

CrcMemo& crcMemo() {
    static CrcMemo memo;
    return memo;
}

std::optional<std::uint32_t> readCrc32(const std::filesystem::path& file) {
    // Never open a FIFO or a device: the read would block or never end.
    if (fileKind(file) != FileKind::Regular) {
        return std::nullopt;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::vector<char> buffer(std::size_t{1} << 22);
    uLong crc = crc32(0L, Z_NULL, 0);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        const auto got = in.gcount();
        if (got > 0) {
            crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(got));
        }
    }
    if (in.bad()) {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(crc);
}

} // namespace

std::optional<std::uint32_t> fileCrc32(const std::filesystem::path& file) {
    const auto before = stampOf(file);
    if (before) {
        if (auto known = crcMemo().find(file.string(), *before)) {
            return known;
        }
    }
    auto crc = readCrc32(file);
    // Remembered only when nothing wrote the file while it was read.
    if (const auto after = stampOf(file); crc && before && after && *before == *after) {
        crcMemo().store(file.string(), *after, *crc);
    }
    return crc;
}

std::optional<IntegrityProblem> checkFileIntegrity(const std::filesystem::path& file,
                                                   std::int64_t expectedSize,
                                                   std::optional<std::uint32_t> expectedCrc) {
    std::error_code ec;
    const auto size = static_cast<std::int64_t>(std::filesystem::file_size(file, ec));
    if (ec) {
        return IntegrityProblem{IntegrityFailure::Unreadable,
                                "its size cannot be read (" + ec.message() + ")"};
    }
    if (expectedSize >= 0 && size != expectedSize) {
        return IntegrityProblem{
            IntegrityFailure::WrongSize,
            std::string(size < expectedSize ? "is truncated" : "is longer than written") + ": " +
                std::to_string(size) + " bytes, the manifest records " +
                std::to_string(expectedSize) + "; copy it again"};
    }
    if (!expectedCrc) {
        return std::nullopt;
    }
    const auto crc = fileCrc32(file);
    if (!crc) {
        return IntegrityProblem{IntegrityFailure::Unreadable, "cannot be read"};
    }
    if (*crc != *expectedCrc) {
        char text[64];
        std::snprintf(text, sizeof text, "CRC-32 %08x, the manifest records %08x", *crc,
                      *expectedCrc);
        return IntegrityProblem{IntegrityFailure::WrongCrc,
                                std::string("is damaged: ") + text +
                                    " (bytes changed in copying?); copy it again"};
    }
    return std::nullopt;
}

} // namespace ttrace
