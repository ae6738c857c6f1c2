#include "ttrace/compare/diff_cache.h"

#include "io/cache_files.h"
#include "io/file_integrity.h"
#include "ttrace/compare/adam_conditioning.h"
#include "ttrace/compare/report_json.h"

#include <tbb/parallel_for.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <system_error>
#include <vector>

namespace ttrace {
namespace {

namespace fs = std::filesystem;

// The files a diff reads in `dir` (manifest.json and every rank file), sorted.
std::vector<fs::path> filesToDescribe(const fs::path& dir) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name == "manifest.json" || entry.path().extension() == ".h5") {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::uintmax_t totalSize(const std::vector<fs::path>& files) {
    std::uintmax_t total = 0;
    for (const auto& f : files) {
        std::error_code ec;
        const auto size = fs::file_size(f, ec);
        total += ec ? 0 : size;
    }
    return total;
}

// Reports the bytes read so far as a fraction of all of them, from the reading threads, and
// latches a cancel so the files not yet started are skipped.
class ReadProgress {
public:
    ReadProgress(const ProgressFn& fn, std::uintmax_t total)
        : fn_(fn)
        , total_(std::max<std::uintmax_t>(total, 1)) {}
    bool add(std::uintmax_t bytes) {
        const std::lock_guard lock(mutex_);
        done_ += bytes;
        if (!cancelled_ && fn_) {
            cancelled_ = !fn_(static_cast<double>(done_) / static_cast<double>(total_),
                              "checking the summary cache against the bundles' bytes");
        }
        return !cancelled_;
    }
    [[nodiscard]] bool cancelled() {
        const std::lock_guard lock(mutex_);
        return cancelled_;
    }

private:
    const ProgressFn& fn_;
    std::uintmax_t total_;
    std::uintmax_t done_ = 0;
    bool cancelled_ = false;
    std::mutex mutex_;
};

// One line per file a diff reads: name, size and the CRC-32 of its bytes. Content, not names
// and times: a file changed in place with its size and mtime restored still changes the key.
// Only regular files are read (a FIFO would block forever); anything else, a file that cannot
// be read, or a cancel makes the pair uncacheable (returns false).
bool describeFiles(std::ostringstream& key, const fs::path& dir, const std::vector<fs::path>& files,
                   ReadProgress& progress) {
    std::error_code ec;
    key << "dir " << fs::weakly_canonical(dir, ec).string() << "\n";
    std::vector<std::string> lines(files.size());
    // Files in parallel: the check reads every byte, at the disk's speed rather than one core's.
    tbb::parallel_for(std::size_t{0}, files.size(), [&](std::size_t i) {
        std::error_code e;
        if (progress.cancelled() || !fs::is_regular_file(files[i], e)) {
            return; // cancelled, or a FIFO, device or directory: never read, and not cached
        }
        const auto size = fs::file_size(files[i], e);
        const auto crc = e ? std::nullopt : fileCrc32(files[i]);
        if (crc && progress.add(size)) {
            std::ostringstream line;
            line << files[i].filename().string() << " " << size << " crc32 " << std::hex
                 << std::setw(8) << std::setfill('0') << *crc;
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

} // namespace

std::string diffOptionsKey(const DiffOptions& options) {
    std::ostringstream key;
    key.precision(17);
    const auto& t = options.tolerance;
    key << "k " << t.k << " c " << t.c << " safety " << t.safetyFactor << " floor " << t.floor
        << " global " << (t.global ? std::to_string(*t.global) : "-") << " conditioning "
        << optimizerConditioningEnabled(t) << " analytic reduction-path\n";
    for (const auto& o : t.overrides) {
        key << "override " << o.modulePattern << " "
            << (o.kind ? tensorKindName(*o.kind) : std::string_view("*")) << " " << o.value << "\n";
    }
    key << "iteration " << (options.iteration ? std::to_string(*options.iteration) : "-")
        << " micro_batch " << (options.microBatch ? std::to_string(*options.microBatch) : "-")
        << "\n";
    return key.str();
}

std::string diffCacheKey(const fs::path& reference, const fs::path& candidate,
                         const DiffOptions& options, const ProgressFn& progress) {
    const auto refFiles = filesToDescribe(reference);
    const auto candFiles = filesToDescribe(candidate);
    ReadProgress read(progress, totalSize(refFiles) + totalSize(candFiles));
    std::ostringstream key;
    key << "ttrace-diff-cache " << kDiffCacheVersion << " json " << kDiffJsonVersion << "\n";
    key << "reference ";
    if (!describeFiles(key, reference, refFiles, read)) {
        return {};
    }
    key << "candidate ";
    if (!describeFiles(key, candidate, candFiles, read)) {
        return {};
    }
    key << diffOptionsKey(options);
    return key.str();
}

std::string diffCacheKey(const fs::path& reference, const fs::path& candidate,
                         const DiffOptions& options) {
    return diffCacheKey(reference, candidate, options, ProgressFn{});
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
    pruneFiles(dir, "diff-", ".json", keep);
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
        if (!ec && writeAtomically(diffCacheFile(dir, key), text)) {
            pruneDiffCache(dir, kMaxCachedDiffs);
            return diffCacheFile(dir, key);
        }
    }
    return {};
}

} // namespace ttrace
