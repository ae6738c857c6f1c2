// libFuzzer target, structure-aware: edits (rank_file_edits.h) applied to rank 0 of a real
// two-rank bundle, which is then opened and merged like a front end does. The base bundle is
// the one make_seeds.py writes (its manifest records no size or CRC-32, so edited files reach
// the indexer); TTRACE_FUZZ_BASE overrides the directory built in at configure time.
// The tools run the extractor in a child process (ttrace-index), where ASan reports would
// only be an exit status: it also runs here, in-process, on these structurally valid files
// (libhdf5 itself copes with them), and its facts must survive the wire format unchanged.
#include "bundle_probe.h"
#include "io/h5_handle.h"
#include "io/index_wire.h"
#include "io/rank_extract.h"
#include "rank_file_edits.h"
#include "scratch_dir.h"

#include <hdf5.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>

namespace {

struct Base {
    ttrace::fuzz::ScratchDir dir;     // the bundle every input is applied to
    std::string rank0;                // pristine bytes of rank-00000.h5
    std::vector<std::string> targets; // its dataset paths
};

std::string slurp(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s (run make_seeds.py or set TTRACE_FUZZ_BASE)\n",
                     file.string().c_str());
        std::exit(2);
    }
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const Base& base() {
    // Destroyed at exit, which removes the scratch bundle.
    static const std::unique_ptr<Base> instance = [] {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        const char* env = std::getenv("TTRACE_FUZZ_BASE");
        const std::filesystem::path from = env ? env : TTRACE_FUZZ_BASE_DEFAULT;
        auto b = std::make_unique<Base>();
        b->rank0 = slurp(from / "rank-00000.h5");
        b->dir.write("manifest.json", slurp(from / "manifest.json"));
        b->dir.write("rank-00001.h5", slurp(from / "rank-00001.h5"));
        b->dir.write("rank-00000.h5", b->rank0);
        const hid_t file =
            H5Fopen((b->dir.path() / "rank-00000.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        b->targets = ttrace::fuzz::datasetPaths(file);
        H5Fclose(file);
        return b;
    }();
    return *instance;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto& b = base();
    const auto rankFile = b.dir.path() / "rank-00000.h5";
    b.dir.write("rank-00000.h5", b.rank0);
    {
        const hid_t file = H5Fopen(rankFile.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        if (file < 0) {
            __builtin_trap(); // the pristine base must open
        }
        ttrace::fuzz::ByteReader in(data, size);
        ttrace::fuzz::applyEdits(file, b.targets, in);
        H5Fclose(file);
    }
    {
        const std::lock_guard lock(ttrace::h5::apiMutex());
        const auto wire = ttrace::encodeRankFacts(ttrace::extractRankFacts(rankFile));
        std::string why;
        const auto decoded = ttrace::decodeRankFacts(wire, why);
        if (!decoded || ttrace::encodeRankFacts(*decoded) != wire) {
            __builtin_trap(); // what the child prints, the parent must read back as it was
        }
    }
    ttrace::fuzz::probeBundle(b.dir.path());
    return 0;
}
