#include "io/h5_storage.h"

#include "io/h5_handle.h"
#include "ttrace/checked_math.h"

namespace ttrace {
namespace {

using PropertyList = h5::Handle<H5Pclose>;

std::string bytesText(std::int64_t declared, std::int64_t stored) {
    return "declares " + std::to_string(declared) + " bytes of data but stores " +
           std::to_string(stored) + " in the file";
}

} // namespace

std::optional<std::string> storageProblem(hid_t dataset, std::int64_t declaredBytes,
                                          std::int64_t fileBytes) {
    const PropertyList dcpl(H5Dget_create_plist(dataset));
    if (!dcpl) {
        return "its storage properties cannot be read";
    }
    const H5D_layout_t layout = H5Pget_layout(dcpl.get());
    if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) {
        return "is a virtual or unknown kind of dataset (its data would come from elsewhere)";
    }
    if (H5Pget_external_count(dcpl.get()) != 0) {
        return "stores its data in external files, outside the bundle";
    }
    const auto stored = static_cast<std::int64_t>(H5Dget_storage_size(dataset));
    if (H5Pget_nfilters(dcpl.get()) > 0) {
        const auto limit = checkedMul(stored, kMaxCompressionRatio);
        if (!limit || declaredBytes > *limit) {
            return bytesText(declaredBytes, stored) + " (compressed more than " +
                   std::to_string(kMaxCompressionRatio) + "x: a fill pattern, not data)";
        }
        return std::nullopt;
    }
    if (stored < declaredBytes) {
        return bytesText(declaredBytes, stored);
    }
    if (layout == H5D_CONTIGUOUS && declaredBytes > 0) {
        const haddr_t offset = H5Dget_offset(dataset);
        if (offset == HADDR_UNDEF ||
            !fitsWithin(static_cast<std::int64_t>(offset), stored, fileBytes)) {
            return "has its data past the end of the file (offset " +
                   std::to_string(static_cast<std::int64_t>(offset)) + " + " +
                   std::to_string(stored) + " > " + std::to_string(fileBytes) + " bytes)";
        }
    }
    return std::nullopt;
}

} // namespace ttrace
