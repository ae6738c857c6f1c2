#include "ttrace/diff_cache.h"

#include "ttrace/report_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
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

// The files a diff reads: the manifest and every rank file (the cache dir itself is skipped,
// so storing an entry does not invalidate it).
void describeFiles(std::ostringstream& key, const fs::path& dir) {
    std::error_code ec;
    key << "dir " << fs::weakly_canonical(dir, ec).string() << "\n";
    std::vector<std::string> lines;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name != "manifest.json" && entry.path().extension() != ".h5") {
            continue;
        }
        std::error_code e1;
        std::error_code e2;
        const auto size = fs::file_size(entry.path(), e1);
        const auto mtime = fs::last_write_time(entry.path(), e2).time_since_epoch().count();
        std::ostringstream line;
        line << name << " " << (e1 ? -1 : static_cast<std::int64_t>(size)) << " "
             << (e2 ? -1 : static_cast<std::int64_t>(mtime));
        lines.push_back(line.str());
    }
    std::sort(lines.begin(), lines.end());
    for (const auto& l : lines) {
        key << l << "\n";
    }
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

} // namespace

std::string diffCacheKey(const fs::path& reference, const fs::path& candidate,
                         const DiffOptions& options) {
    std::ostringstream key;
    key.precision(17);
    key << "ttrace-diff-cache " << kDiffCacheVersion << " json " << kDiffJsonVersion << "\n";
    key << "reference ";
    describeFiles(key, reference);
    key << "candidate ";
    describeFiles(key, candidate);
    const auto& t = options.tolerance;
    key << "k " << t.k << " c " << t.c << " safety " << t.safetyFactor << " floor " << t.floor
        << " global " << (t.global ? std::to_string(*t.global) : "-") << "\n";
    for (const auto& o : t.overrides) {
        key << "override " << o.modulePattern << " "
            << (o.kind ? tensorKindName(*o.kind) : std::string_view("*")) << " " << o.value << "\n";
    }
    key << "iteration " << (options.iteration ? std::to_string(*options.iteration) : "-")
        << " micro_batch " << (options.microBatch ? std::to_string(*options.microBatch) : "-")
        << "\n";
    return key.str();
}

std::vector<fs::path> diffCacheDirs(const fs::path& candidate) {
    std::vector<fs::path> dirs{candidate / ".ttrace-cache"};
    if (auto user = userCacheDir(); !user.empty()) {
        dirs.push_back(user);
    }
    return dirs;
}

fs::path diffCacheFile(const fs::path& dir, const std::string& key) {
    return dir / ("diff-" + hexHash(key) + ".json");
}

std::optional<DiffResult> loadCachedDiff(const fs::path& candidate, const std::string& key) {
    for (const auto& dir : diffCacheDirs(candidate)) {
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

fs::path storeCachedDiff(const fs::path& candidate, const std::string& key,
                         const DiffResult& result) {
    const std::string text = nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" + diffResultToJson(result, false);
    for (const auto& dir : diffCacheDirs(candidate)) {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) {
            continue;
        }
        const auto file = diffCacheFile(dir, key);
        // Write then rename: a concurrent reader sees the old entry or the new one, never half.
        const auto tmp = file.string() + ".tmp" + std::to_string(::getpid());
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            if (!out || !(out << text) || !out.flush()) {
                fs::remove(tmp, ec);
                continue;
            }
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
