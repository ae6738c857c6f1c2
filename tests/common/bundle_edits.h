#pragma once
// Edits to a real bundle that play a run which wrote other values: the tests that must see a
// changed value recomputed (and never served from a cache) share them.
#include <hdf5.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ttrace::test {

// Multiplies one float32 dataset of a rank file by (1 + delta) in place: a subtle wrong scale.
inline bool scaleDataset(const std::filesystem::path& file, const std::string& path, double delta) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t f = H5Fopen(file.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t ds = f < 0 ? -1 : H5Dopen2(f, path.c_str(), H5P_DEFAULT);
    bool ok = ds >= 0;
    if (ok) {
        const hid_t space = H5Dget_space(ds);
        std::vector<float> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
        ok = H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0;
        for (auto& x : v) {
            x = static_cast<float>(static_cast<double>(x) * (1.0 + delta));
        }
        ok = ok && H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0;
        H5Sclose(space);
        H5Dclose(ds);
    }
    if (f >= 0) {
        H5Fclose(f);
    }
    return ok;
}

// Such a run's manifest records the checksum of what it wrote. Dropping the recorded size and
// CRC-32 (optional fields) keeps the reader from taking the edit for damage in copying.
inline bool forgetChecksums(const std::filesystem::path& bundle) {
    std::ifstream in(bundle / "manifest.json");
    auto manifest = nlohmann::json::parse(in, nullptr, false);
    if (manifest.is_discarded()) {
        return false;
    }
    for (auto& rank : manifest["ranks"]) {
        rank.erase("file_size");
        rank.erase("crc32");
    }
    std::ofstream(bundle / "manifest.json") << manifest.dump(2);
    return true;
}

} // namespace ttrace::test
