#include "ttrace/diff_cache.h"

#include "io/file_integrity.h"
#include "ttrace/adam_conditioning.h"
#include "ttrace/report_json.h"

#include <tbb/parallel_for.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <system_error>
#include <unistd.h>
#include <utility>
#include <vector>

namespace ttrace {
namespace {

namespace fs = std::filesystem;

// One line per file a diff reads (the manifest and every rank file): name, size and the CRC-32
// of its bytes. Content, not names and times: a file changed in place with its size and mtime
// restored still changes the key. Only regular files are read (a FIFO would block forever);
// anything else, or a file that cannot be read, makes the pair uncacheable (returns false).
bool describeFiles(std::ostringstream& key, const fs::path& dir) {
    std::error_code ec;
    key << "dir " << fs::weakly_canonical(dir, ec).string() << "\n";
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name == "manifest.json" || entry.path().extension() == ".h5") {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    std::vector<std::string> lines(files.size());
    // Files in parallel: the check reads every byte, at the disk's speed rather than one core's.
    tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
        std::error_code e;
        std::ostringstream line;
        line << files[i].filename().string() << " ";
        if (!fs::is_regular_file(files[i], e)) {
            return; // a FIFO, device or directory: never read, and the pair is not cached
        }
        const auto size = fs::file_size(files[i], e);
        const auto crc = e ? std::nullopt : fileCrc32(files[i]);
        if (crc) {
            line << size << " crc32 " << std::hex << std::setw(8) << std::setfill('0') << *crc;
            lines[i] = line.str();
        }
    });
    for (const auto& l : lines) {
        if (l.empty()) {
            return false;
        }
        key << l << "\n";
    }
    return true;
}

std::string hexHash(const std::string& text) {
    // FNV-1a 64: a file name, not a security boundary; the full key is checked on load.
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char c : text) {
        h = (h ^ c) * 0x100000001b3ULL;
    }
    std::ostringstream out;
    out << std::hex << std::setw(16) << std::setfill('0') << h;
    return out.str();
}

fs::path userCacheDir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
        return fs::path(xdg) / "ttrace";
    }
    if (const char* home = std::getenv("HOME"); home && *home) {
        return fs::path(home) / ".cache" / "ttrace";
    }
    return {};
}

// Writes and fsyncs `text`: after a crash the rename below exposes either the old entry or a
// complete new one, never a file of zeros.
bool writeDurably(const std::string& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return false;
    }
    std::size_t done = 0;
    while (done < text.size()) {
        const auto n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0) {
            ::close(fd);
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    return ::close(fd) == 0 && synced;
}

} // namespace

std::string diffCacheKey(const fs::path& reference, const fs::path& candidate,
                         const DiffOptions& options) {
    std::ostringstream key;
    key.precision(17);
    key << "ttrace-diff-cache " << kDiffCacheVersion << " json " << kDiffJsonVersion << "\n";
    key << "reference ";
    if (!describeFiles(key, reference)) {
        return {};
    }
    key << "candidate ";
    if (!describeFiles(key, candidate)) {
        return {};
    }
    const auto& t = options.tolerance;
    key << "k " << t.k << " c " << t.c << " safety " << t.safetyFactor << " floor " << t.floor
        << " global " << (t.global ? std::to_string(*t.global) : "-") << " conditioning "
        << optimizerConditioningEnabled(t) << "\n";
    for (const auto& o : t.overrides) {
        key << "override " << o.modulePattern << " "
            << (o.kind ? tensorKindName(*o.kind) : std::string_view("*")) << " " << o.value << "\n";
    }
    key << "iteration " << (options.iteration ? std::to_string(*options.iteration) : "-")
        << " micro_batch " << (options.microBatch ? std::to_string(*options.microBatch) : "-")
        << "\n";
    return key.str();
}

std::vector<fs::path> diffCacheDirs() {
    // Never inside a bundle: bundles are evidence (attached to bug reports, read-only mounts,
    // shared between users), and a tool that reads them must leave them byte for byte as found.
    std::vector<fs::path> dirs;
    if (auto user = userCacheDir(); !user.empty()) {
        dirs.push_back(user);
    }
    return dirs;
}

fs::path diffCacheFile(const fs::path& dir, const std::string& key) {
    return dir / ("diff-" + hexHash(key) + ".json");
}

std::optional<DiffResult> loadCachedDiff(const std::string& key) {
    if (key.empty()) {
        return std::nullopt;
    }
    for (const auto& dir : diffCacheDirs()) {
        std::ifstream in(diffCacheFile(dir, key), std::ios::binary);
        if (!in) {
            continue;
        }
        std::string keyLine;
        std::string storedKey;
        // Entry layout: the key as a JSON string on the first line, then the report.
        std::getline(in, keyLine);
        try {
            storedKey = nlohmann::json::parse(keyLine).get<std::string>();
        } catch (const std::exception&) {
            continue;
        }
        if (storedKey != key) {
            continue; // hash collision or stale entry
        }
        std::ostringstream body;
        body << in.rdbuf();
        std::string error;
        if (auto result = diffResultFromJson(body.str(), error)) {
            return result;
        }
    }
    return std::nullopt;
}

void pruneDiffCache(const fs::path& dir, std::size_t keep) {
    std::vector<std::pair<fs::file_time_type, fs::path>> entries;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name.starts_with("diff-") && name.ends_with(".json")) {
            entries.emplace_back(entry.last_write_time(ec), entry.path());
        }
    }
    if (entries.size() <= keep) {
        return;
    }
    // Newest first; everything past `keep` goes. Failures are ignored: another process may
    // have pruned the same entry already.
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = keep; i < entries.size(); ++i) {
        fs::remove(entries[i].second, ec);
    }
}

fs::path storeCachedDiff(const std::string& key, const DiffResult& result) {
    if (key.empty()) {
        return {};
    }
    const std::string text =
        nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" +
        diffResultToJson(result, false);
    for (const auto& dir : diffCacheDirs()) {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) {
            continue;
        }
        const auto file = diffCacheFile(dir, key);
        // Write then rename: a concurrent reader sees the old entry or the new one, never half.
        const auto tmp = file.string() + ".tmp" + std::to_string(::getpid());
        if (!writeDurably(tmp, text)) {
            fs::remove(tmp, ec);
            continue;
        }
        fs::rename(tmp, file, ec);
        if (!ec) {
            pruneDiffCache(dir, kMaxCachedDiffs);
            return file;
        }
        fs::remove(tmp, ec);
    }
    return {};
}

} // namespace ttrace
