#include "ttrace/compare/cache_fingerprint.h"

#include "io/cache_files.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/compare/report_json.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace ttrace {
namespace {

namespace fs = std::filesystem;

fs::path seenFile(const fs::path& dir, const std::string& fingerprint) {
    return dir / ("seen-" + hexHash(fingerprint) + ".json");
}

// One line per file a diff reads: name, size, device, inode and both times in nanoseconds.
// The change time is there because a user cannot set it back (os.utime restores mtime only).
bool describeStamps(std::ostringstream& out, const fs::path& dir) {
    std::error_code ec;
    out << "dir " << fs::weakly_canonical(dir, ec).string() << "\n";
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name == "manifest.json" || entry.path().extension() == ".h5") {
            files.push_back(entry.path());
        }
    }
    if (ec || files.empty()) {
        return false;
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
        struct stat st {};
        if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
            return false;
        }
        out << file.filename().string() << " " << st.st_size << " dev " << st.st_dev << " ino "
            << st.st_ino << " mtime " << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec << " ctime "
            << st.st_ctim.tv_sec << "." << st.st_ctim.tv_nsec << "\n";
    }
    return true;
}

std::optional<nlohmann::json> readPointer(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    auto json = nlohmann::json::parse(in, nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json["fingerprint"].is_string() ||
        !json["key"].is_string()) {
        return std::nullopt;
    }
    return json;
}

} // namespace

std::string diffCacheFingerprint(const fs::path& reference, const fs::path& candidate,
                                 const DiffOptions& options) {
    std::ostringstream out;
    out << "ttrace-diff-fingerprint " << kDiffCacheVersion << " json " << kDiffJsonVersion
        << "\nreference ";
    if (!describeStamps(out, reference)) {
        return {};
    }
    out << "candidate ";
    if (!describeStamps(out, candidate)) {
        return {};
    }
    out << diffOptionsKey(options);
    return out.str();
}

void rememberFingerprint(const std::string& fingerprint, const std::string& contentKey) {
    if (fingerprint.empty() || contentKey.empty()) {
        return;
    }
    const nlohmann::json pointer{{"fingerprint", fingerprint}, {"key", contentKey}};
    for (const auto& dir : diffCacheDirs()) {
        std::error_code ec;
        const auto file = seenFile(dir, fingerprint);
        if (const auto old = readPointer(file); old && *old == pointer) {
            // Already there: only marked as used, so pruning keeps the pairs opened lately.
            fs::last_write_time(file, fs::file_time_type::clock::now(), ec);
            return;
        }
        fs::create_directories(dir, ec);
        const auto text = pointer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        if (!ec && writeAtomically(file, text)) {
            pruneFiles(dir, "seen-", ".json", kMaxSeenFingerprints);
            return;
        }
    }
}

std::optional<SeenDiff> loadSeenDiff(const std::string& fingerprint) {
    if (fingerprint.empty()) {
        return std::nullopt;
    }
    for (const auto& dir : diffCacheDirs()) {
        const auto pointer = readPointer(seenFile(dir, fingerprint));
        if (!pointer || (*pointer)["fingerprint"].get<std::string>() != fingerprint) {
            continue; // none, or another fingerprint with the same hash
        }
        auto key = (*pointer)["key"].get<std::string>();
        if (auto result = loadCachedDiff(key)) {
            return SeenDiff{std::move(key), std::move(*result)};
        }
    }
    return std::nullopt;
}

} // namespace ttrace
