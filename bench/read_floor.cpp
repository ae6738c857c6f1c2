// The pure-read floor of a diff: every dataset of every rank file of the given bundles read
// once through libhdf5 into one reused buffer, nothing else. A diff cannot be faster than
// reading its bytes, so bench/perf_table.py reports `ttrace diff` as a multiple of this.
//
// usage: read_floor BUNDLE_DIR [BUNDLE_DIR ...]   prints "<bytes> <seconds>"
#include <hdf5.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

struct Totals {
    unsigned long long bytes = 0;
    std::vector<char> buffer; // reused: the floor must not pay for allocation either
    bool failed = false;
};

herr_t readDataset(hid_t group, const char* name, const H5O_info_t* info, void* data) {
    auto& totals = *static_cast<Totals*>(data);
    if (info->type != H5O_TYPE_DATASET) {
        return 0;
    }
    const hid_t dataset = H5Dopen2(group, name, H5P_DEFAULT);
    const hid_t type = H5Dget_type(dataset);
    const hid_t space = H5Dget_space(dataset);
    const auto points = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space));
    const std::size_t bytes = points * H5Tget_size(type);
    if (totals.buffer.size() < bytes) {
        totals.buffer.resize(bytes);
    }
    if (bytes > 0 &&
        H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, totals.buffer.data()) < 0) {
        std::fprintf(stderr, "read_floor: cannot read %s\n", name);
        totals.failed = true;
    }
    totals.bytes += bytes;
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(dataset);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: read_floor BUNDLE_DIR [BUNDLE_DIR ...]\n");
        return 2;
    }
    Totals totals;
    const auto start = std::chrono::steady_clock::now();
    for (int a = 1; a < argc; ++a) {
        for (const auto& entry : std::filesystem::directory_iterator(argv[a])) {
            if (entry.path().extension() != ".h5") {
                continue;
            }
            const hid_t file = H5Fopen(entry.path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
            if (file < 0) {
                std::fprintf(stderr, "read_floor: cannot open %s\n", entry.path().c_str());
                return 1;
            }
            H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, readDataset, &totals, H5O_INFO_BASIC);
            H5Fclose(file);
        }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%llu %.6f\n", totals.bytes, seconds);
    return totals.failed ? 1 : 0;
}
