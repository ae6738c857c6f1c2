// Where the time of one `ttrace diff` goes: the engine's stages (core/include/ttrace/
// diff_parts.h, the functions `ttrace diff` and `ttrace-mpi` run) timed one after another in
// one process, wall and CPU (this process and its indexer children) per stage. The rank files'
// CRC-32s are taken first as a stage of their own, so "open" is the indexing and checks alone.
//
// usage: diff_stages REF_DIR CAND_DIR [JSON_OUT]
// The rank-file cache (TTRACE_NO_RANK_FILE_CACHE=1 turns it off) applies as in `ttrace diff`.
#include "io/file_integrity.h"
#include "ttrace/compare/diff_parts.h"
#include "ttrace/compare/report_json.h"

#include <tbb/parallel_for.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

double cpuSeconds() {
    double total = 0;
    for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
        rusage u{};
        getrusage(who, &u);
        for (const auto& t : {u.ru_utime, u.ru_stime}) {
            total += static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
        }
    }
    return total;
}

class Stage {
public:
    explicit Stage(const char* name)
        : name_(name) {}
    ~Stage() {
        const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start_;
        std::printf("%-10s wall %8.3f s  cpu %8.3f s\n", name_, wall.count(), cpuSeconds() - cpu_);
    }
    Stage(const Stage&) = delete;
    Stage& operator=(const Stage&) = delete;

private:
    const char* name_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    double cpu_ = cpuSeconds();
};

std::vector<fs::path> rankFiles(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() == ".h5") {
            files.push_back(entry.path());
        }
    }
    return files;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: diff_stages REF_DIR CAND_DIR [JSON_OUT]\n");
        return 64;
    }
    const fs::path ref = argv[1], cand = argv[2];
    ttrace::DiffOptions options;
    options.useCache = false; // as the bench's `ttrace diff --no-cache`
    {
        Stage s("checksums");
        auto files = rankFiles(ref);
        for (const auto& f : rankFiles(cand)) {
            files.push_back(f);
        }
        tbb::parallel_for(std::size_t{0}, files.size(),
                          [&](std::size_t i) { (void)ttrace::fileCrc32(files[i]); });
    }
    ttrace::OpenedPair pair;
    {
        Stage s("open");
        pair = ttrace::openDiffPair(ref, cand, options, {});
    }
    if (pair.early) {
        std::fprintf(stderr, "the pair cannot be compared\n");
        return 2;
    }
    std::vector<ttrace::TensorId> ids;
    ttrace::ComparedReference view;
    {
        Stage s("list");
        view = ttrace::referenceForComparison(*pair.reference.bundle, *pair.candidate.bundle);
        ids = ttrace::diffTensorIds(*pair.reference.bundle, *pair.candidate.bundle, pair.options);
    }
    const auto& compareRef = view.view ? *view.view : *pair.reference.bundle;
    ttrace::SubsetComparison compared;
    {
        Stage s("compare");
        std::vector<std::size_t> all(ids.size());
        for (std::size_t i = 0; i < all.size(); ++i) {
            all[i] = i;
        }
        compared =
            ttrace::compareTensorSubset(compareRef, *pair.candidate.bundle, pair.options, ids, all);
    }
    ttrace::DiffResult diff;
    {
        Stage s("analysis");
        diff = ttrace::finishDiff(compareRef, *pair.candidate.bundle, pair.options,
                                  std::move(compared.tensors), compared.cancelled, {}, view.notes);
        ttrace::addOpeningDiagnostics(pair.diagnostics, diff);
    }
    {
        Stage s("report");
        const auto json = ttrace::diffResultToJson(diff);
        if (argc > 3) {
            std::ofstream(argv[3]) << json;
        }
    }
    std::printf("tensors %zu divergent %lld\n", ids.size(),
                static_cast<long long>(diff.summary.divergent));
    return 0;
}
