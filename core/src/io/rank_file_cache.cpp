#include "io/rank_file_cache.h"

#include "io/cache_files.h"
#include "io/index_wire.h"
#include "io/unique_fd.h"

#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace ttrace {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "ttrace-rank-file-cache 1\n";
// Facts are a few hundred bytes per dataset; anything larger than this is not an entry of ours.
constexpr std::size_t kMaxEntryBytes = std::size_t{256} << 20;
// A file whose modification or change time is this recent is not cached: a second write within
// the time stamps' granularity (a few milliseconds on ext4, a second or two elsewhere) could
// leave the stamp as it was.
constexpr long long kRacyNs = 3'000'000'000LL;
// Entries kept (newest by write time); the rest are pruned once per process.
constexpr std::size_t kKeepEntries = 65536;

bool enabled() {
    const char* off = std::getenv("TTRACE_NO_RANK_FILE_CACHE");
    return !(off && *off && std::string_view(off) != "0");
}

fs::path cacheDir() {
    const auto root = userCacheDir();
    return root.empty() ? root : root / "rank-files";
}

std::string absoluteName(const fs::path& file) {
    std::error_code ec;
    const auto abs = fs::absolute(file, ec);
    return (ec ? file : abs).lexically_normal().string();
}

// The indexer build that extracted the facts: its path, size and modification time.
std::string helperTag(const fs::path& helper) {
    const auto stamp = stampOf(helper);
    if (!stamp) {
        return {};
    }
    return absoluteName(helper) + " " + std::to_string(stamp->size) + " " +
           std::to_string(stamp->mtimeNs);
}

void putU64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
}

void putText(std::string& out, std::string_view text) {
    putU64(out, text.size());
    out.append(text);
}

std::uint32_t crcOf(std::string_view bytes) {
    return static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                            reinterpret_cast<const Bytef*>(bytes.data()),
                                            static_cast<uInt>(bytes.size())));
}

std::string stampText(const FileStamp& s) {
    std::string out;
    for (const auto v : {static_cast<std::uint64_t>(s.dev), static_cast<std::uint64_t>(s.ino),
                         static_cast<std::uint64_t>(s.size), static_cast<std::uint64_t>(s.mtimeNs),
                         static_cast<std::uint64_t>(s.ctimeNs)}) {
        putU64(out, v);
    }
    return out;
}

std::string encodeEntry(const std::string& key, const FileStamp& stamp, std::string_view payload) {
    std::string out(kMagic);
    putText(out, key);
    putText(out, stampText(stamp));
    putText(out, payload);
    const auto crc = crcOf(out);
    for (int i = 0; i < 4; ++i) {
        out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
    }
    return out;
}

// Reads one length-prefixed field; false when the bytes end first.
bool takeText(std::string_view& in, std::string_view& field) {
    if (in.size() < 8) {
        return false;
    }
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) {
        n |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
    }
    in.remove_prefix(8);
    if (n > in.size()) {
        return false;
    }
    field = in.substr(0, n);
    in.remove_prefix(n);
    return true;
}

// The payload, when the entry is whole (its CRC-32), ours, for `key` and for this stamp.
std::optional<std::string> decodeEntry(std::string_view bytes, const std::string& key,
                                       const FileStamp& stamp) {
    if (bytes.size() < kMagic.size() + 4 || !bytes.starts_with(kMagic)) {
        return std::nullopt;
    }
    const auto body = bytes.substr(0, bytes.size() - 4);
    std::uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) {
        stored |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[body.size() + i]))
                  << (8 * i);
    }
    if (crcOf(body) != stored) {
        return std::nullopt;
    }
    auto in = body.substr(kMagic.size());
    std::string_view k, s, payload;
    if (!takeText(in, k) || !takeText(in, s) || !takeText(in, payload) || !in.empty() || k != key ||
        s != stampText(stamp)) {
        return std::nullopt;
    }
    return std::string(payload);
}

std::optional<std::string> readEntryFile(const fs::path& file) {
    const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::size_t>(st.st_size) > kMaxEntryBytes) {
        return std::nullopt;
    }
    std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < bytes.size()) {
        const auto n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
        if (n <= 0) {
            return std::nullopt;
        }
        got += static_cast<std::size_t>(n);
    }
    return bytes;
}

std::string entryKey(std::string_view kind, const fs::path& file, const std::string& tag) {
    return std::string(kind) + "\n" + absoluteName(file) + "\n" + tag;
}

std::optional<std::string> lookup(const std::string& key, const FileStamp& stamp) {
    const auto dir = cacheDir();
    if (!enabled() || dir.empty()) {
        return std::nullopt;
    }
    const auto bytes = readEntryFile(dir / (hexHash(key) + ".bin"));
    return bytes ? decodeEntry(*bytes, key, stamp) : std::nullopt;
}

bool racy(const FileStamp& stamp) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const long long nowNs = now.tv_sec * 1000000000LL + now.tv_nsec;
    return nowNs - std::max(stamp.mtimeNs, stamp.ctimeNs) < kRacyNs;
}

// Stores `payload` computed from the file as it was at `stamp`, if it still is.
void store(const std::string& key, const fs::path& file, const FileStamp& stamp,
           std::string_view payload) {
    const auto dir = cacheDir();
    const auto now = stampOf(file);
    if (!enabled() || dir.empty() || !now || !(*now == stamp) || racy(stamp)) {
        return;
    }
    static std::mutex mutex; // writeAtomically's temporary file is named by process
    static bool pruned = false;
    const std::lock_guard lock(mutex);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!writeAtomically(dir / (hexHash(key) + ".bin"), encodeEntry(key, stamp, payload))) {
        return; // a read-only or full cache directory costs the next open time, nothing else
    }
    if (!std::exchange(pruned, true)) {
        pruneFiles(dir, "", ".bin", kKeepEntries);
    }
}

} // namespace

std::optional<std::uint32_t> cachedFileCrc(const fs::path& file, const FileStamp& stamp) {
    const auto payload = lookup(entryKey("crc32", file, {}), stamp);
    if (!payload || payload->size() != 4) {
        return std::nullopt;
    }
    std::uint32_t crc = 0;
    for (int i = 0; i < 4; ++i) {
        crc |= static_cast<std::uint32_t>(static_cast<unsigned char>((*payload)[i])) << (8 * i);
    }
    return crc;
}

void storeFileCrc(const fs::path& file, const FileStamp& stamp, std::uint32_t crc) {
    std::string payload;
    for (int i = 0; i < 4; ++i) {
        payload.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
    }
    store(entryKey("crc32", file, {}), file, stamp, payload);
}

std::optional<RankFacts> cachedRankFacts(const fs::path& file, const FileStamp& stamp,
                                         const fs::path& helper) {
    const auto tag = helperTag(helper);
    if (tag.empty()) {
        return std::nullopt;
    }
    const auto payload = lookup(entryKey("facts", file, tag), stamp);
    std::string why;
    return payload ? decodeRankFacts(*payload, why) : std::nullopt;
}

void storeRankFacts(const fs::path& file, const FileStamp& stamp, const fs::path& helper,
                    const RankFacts& facts) {
    if (const auto tag = helperTag(helper); !tag.empty()) {
        store(entryKey("facts", file, tag), file, stamp, encodeRankFacts(facts));
    }
}

} // namespace ttrace
