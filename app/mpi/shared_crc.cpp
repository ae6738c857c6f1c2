#include "shared_crc.h"

#include "ttrace/io/shared_checksums.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace ttrace::mpi {
namespace {

namespace fs = std::filesystem;

// The files the open and the cache key read (manifest.json and the rank files), named as
// they name them (directory / file name), with their sizes.
std::vector<std::pair<fs::path, std::uintmax_t>> bundleFiles(const fs::path& dir) {
    std::vector<std::pair<fs::path, std::uintmax_t>> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        std::error_code e;
        if ((name == "manifest.json" || entry.path().extension() == ".h5") &&
            entry.is_regular_file(e)) {
            files.emplace_back(dir / name, entry.file_size(e));
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

// This process's files: largest first onto the least loaded process (the same on every one).
std::vector<fs::path> myFiles(const MpiWorld& world, const fs::path& reference,
                              const fs::path& candidate) {
    auto files = bundleFiles(reference);
    for (auto& f : bundleFiles(candidate)) {
        files.push_back(std::move(f));
    }
    std::stable_sort(files.begin(), files.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::uintmax_t> load(static_cast<std::size_t>(world.size()));
    std::vector<fs::path> mine;
    for (const auto& [path, size] : files) {
        const auto least = std::min_element(load.begin(), load.end()) - load.begin();
        load[static_cast<std::size_t>(least)] += std::max<std::uintmax_t>(size, 1);
        if (least == world.rank()) {
            mine.push_back(path);
        }
    }
    return mine;
}

// "size mtime ctime crc\tpath\n" per file.
std::string encode(const std::vector<FileChecksum>& sums) {
    std::ostringstream out;
    for (const auto& s : sums) {
        out << s.size << ' ' << s.mtimeNs << ' ' << s.ctimeNs << ' ' << s.crc << '\t' << s.path
            << '\n';
    }
    return out.str();
}

std::vector<FileChecksum> decode(const std::string& text) {
    std::vector<FileChecksum> sums;
    std::istringstream in(text);
    FileChecksum s;
    while (in >> s.size >> s.mtimeNs >> s.ctimeNs >> s.crc && in.get() == '\t' &&
           std::getline(in, s.path)) {
        sums.push_back(s);
    }
    return sums;
}

} // namespace

std::size_t shareChecksums(const MpiWorld& world, const fs::path& reference,
                           const fs::path& candidate) {
    std::vector<FileChecksum> mine;
    for (const auto& file : myFiles(world, reference, candidate)) {
        if (auto sum = checksumToShare(file)) {
            mine.push_back(std::move(*sum));
        }
    }
    std::size_t adopted = 0;
    const auto all = world.allGather(encode(mine));
    for (std::size_t r = 0; r < all.size(); ++r) {
        if (static_cast<int>(r) == world.rank()) {
            continue;
        }
        for (const auto& sum : decode(all[r])) {
            adopted += adoptChecksum(sum) ? 1 : 0;
        }
    }
    return adopted;
}

} // namespace ttrace::mpi
