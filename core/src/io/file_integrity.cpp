#include "io/file_integrity.h"
#include "io/file_stamp.h"
#include "io/rank_file_cache.h"
#include "io/regular_file.h"
#include "io/unique_fd.h"
#include "ttrace/io/shared_checksums.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

namespace ttrace {
namespace {

// Pieces checksummed in parallel: large enough that a read is one long sequential transfer,
// small enough that a few-hundred-megabyte rank file spreads over every core.
constexpr std::size_t kCrcPiece = std::size_t{8} << 20;

// CRCs this process computed, so the summary cache's content check and the open's integrity
// check read each file once. Across processes, rank_file_cache.h keeps them on disk under the
// same stamp rule (the summary cache on disk is keyed by the CRCs themselves).
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

// CRC-32 of bytes [offset, offset + length) of the file; nothing when fewer can be read.
std::optional<uLong> pieceCrc(int fd, off_t offset, std::size_t length, std::vector<Bytef>& buf) {
    buf.resize(length);
    std::size_t got = 0;
    while (got < length) {
        const auto n =
            ::pread(fd, buf.data() + got, length - got, offset + static_cast<off_t>(got));
        if (n <= 0) {
            return std::nullopt; // an error, or the file shrank while being read
        }
        got += static_cast<std::size_t>(n);
    }
    return crc32(crc32(0L, Z_NULL, 0), buf.data(), static_cast<uInt>(length));
}

std::optional<std::uint32_t> readCrc32(const std::filesystem::path& file, std::size_t piece) {
    // Never open a FIFO or a device: the read would block or never end.
    if (fileKind(file) != FileKind::Regular || piece == 0) {
        return std::nullopt;
    }
    const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
        return std::nullopt;
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    const std::size_t pieces = (size + piece - 1) / piece;
    std::vector<uLong> crcs(pieces);
    std::atomic<bool> failed{false};
    tbb::enumerable_thread_specific<std::vector<Bytef>> buffers;
    // Isolated: callers may hold the HDF5 lock, and a thread waiting here must not pick up an
    // unrelated task that takes that lock again.
    tbb::this_task_arena::isolate([&] {
        tbb::parallel_for(std::size_t{0}, pieces, [&](std::size_t i) {
            const std::size_t length = std::min(piece, size - i * piece);
            const auto crc =
                pieceCrc(fd.get(), static_cast<off_t>(i * piece), length, buffers.local());
            crc ? void(crcs[i] = *crc) : failed.store(true);
        });
    });
    if (failed) {
        return std::nullopt;
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    for (std::size_t i = 0; i < pieces; ++i) {
        crc = crc32_combine(crc, crcs[i], static_cast<z_off_t>(std::min(piece, size - i * piece)));
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
    if (before) {
        // Another process's read of the unchanged file (rank_file_cache.h).
        if (auto kept = cachedFileCrc(file, *before)) {
            crcMemo().store(file.string(), *before, *kept);
            return kept;
        }
    }
    auto crc = readCrc32(file, kCrcPiece);
    // Remembered only when nothing wrote the file while it was read.
    if (const auto after = stampOf(file); crc && before && after && *before == *after) {
        crcMemo().store(file.string(), *after, *crc);
        storeFileCrc(file, *after, *crc);
    }
    return crc;
}

std::optional<std::uint32_t> fileCrc32InPieces(const std::filesystem::path& file,
                                               std::size_t pieceBytes) {
    return readCrc32(file, pieceBytes);
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

std::optional<FileChecksum> checksumToShare(const std::filesystem::path& file) {
    const auto before = stampOf(file);
    const auto crc = fileCrc32(file);
    const auto after = stampOf(file);
    if (!crc || !before || !after || !(*before == *after)) {
        return std::nullopt;
    }
    return FileChecksum{file.string(), after->size, after->mtimeNs, after->ctimeNs, *crc};
}

bool adoptChecksum(const FileChecksum& checksum) {
    // Size, mtime and ctime, not the inode: another node may number the same file otherwise.
    // The ctime cannot be set by a user, so equal times mean no write since it was read.
    const auto here = stampOf(checksum.path);
    if (!here || here->size != checksum.size || here->mtimeNs != checksum.mtimeNs ||
        here->ctimeNs != checksum.ctimeNs) {
        return false;
    }
    crcMemo().store(checksum.path, *here, checksum.crc);
    return true;
}

} // namespace ttrace
