#include "io/cache_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

namespace ttrace {
namespace {

namespace fs = std::filesystem;

// Writes and fsyncs `text`: after a crash the rename that follows exposes either the old file
// or a complete new one, never a file of zeros.
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

fs::path userCacheDir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
        return fs::path(xdg) / "ttrace";
    }
    if (const char* home = std::getenv("HOME"); home && *home) {
        return fs::path(home) / ".cache" / "ttrace";
    }
    return {};
}

std::string hexHash(const std::string& text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char c : text) {
        h = (h ^ c) * 0x100000001b3ULL;
    }
    std::ostringstream out;
    out << std::hex << std::setw(16) << std::setfill('0') << h;
    return out.str();
}

bool writeAtomically(const fs::path& file, const std::string& text) {
    std::error_code ec;
    const auto tmp = file.string() + ".tmp" + std::to_string(::getpid());
    if (!writeDurably(tmp, text)) {
        fs::remove(tmp, ec);
        return false;
    }
    fs::rename(tmp, file, ec);
    if (ec) {
        fs::remove(tmp, ec);
        return false;
    }
    return true;
}

void pruneFiles(const fs::path& dir, std::string_view prefix, std::string_view suffix,
                std::size_t keep) {
    std::vector<std::pair<fs::file_time_type, fs::path>> entries;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name.starts_with(prefix) && name.ends_with(suffix)) {
            entries.emplace_back(entry.last_write_time(ec), entry.path());
        }
    }
    if (entries.size() <= keep) {
        return;
    }
    // Newest first; everything past `keep` goes. Failures are ignored: another process may
    // have pruned the same file already.
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = keep; i < entries.size(); ++i) {
        fs::remove(entries[i].second, ec);
    }
}

} // namespace ttrace
