// libFuzzer target: arbitrary bytes as the one rank file of a one-rank bundle. The manifest
// records no size or CRC-32, so the bytes reach HDF5 and the indexer as a stranger's file
// with a matching checksum would: libhdf5 parses the metadata in the ttrace-index child
// (where it may crash or loop: that must come back as a typed error), the core judges the
// facts it prints, and every tensor it indexes is merged.
#include "bundle_probe.h"
#include "scratch_dir.h"

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

constexpr std::string_view kManifest = R"({
  "format": "ttrace-bundle", "format_version": 1, "role": "candidate",
  "variants": ["nominal"], "world_size": 1, "parallel": {"tp": 1},
  "ranks": [{"rank": 0, "file": "rank-00000.h5", "coords": {"tp": 0}}]
})";

const ttrace::fuzz::ScratchDir& bundleDir() {
    static const ttrace::fuzz::ScratchDir dir = [] {
        // Keep HDF5 from printing an error stack for every malformed input.
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        // A looping libhdf5 is ended well inside libFuzzer's own per-input timeout.
        setenv("TTRACE_INDEX_TIMEOUT_S", "2", 0);
        return ttrace::fuzz::ScratchDir();
    }();
    return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto& dir = bundleDir();
    static const bool manifestWritten = (dir.write("manifest.json", kManifest), true);
    (void)manifestWritten;
    dir.write("rank-00000.h5", std::string_view(reinterpret_cast<const char*>(data), size));
    ttrace::fuzz::probeBundle(dir.path());
    return 0;
}
