#include "io/storage_check.h"

#include "ttrace/io/checked_math.h"

namespace ttrace {
namespace {

std::string bytesText(std::int64_t declared, std::int64_t stored) {
    return "declares " + std::to_string(declared) + " bytes of data but stores " +
           std::to_string(stored) + " in the file";
}

} // namespace

std::optional<std::string> storageProblem(const DatasetFacts& dataset, std::int64_t declaredBytes,
                                          std::int64_t fileBytes) {
    if (dataset.layout == StoredLayout::Unreadable) {
        return "its storage properties cannot be read";
    }
    if (dataset.layout == StoredLayout::Other) {
        return "is a virtual or unknown kind of dataset (its data would come from elsewhere)";
    }
    if (dataset.externalFiles != 0) {
        return "stores its data in external files, outside the bundle";
    }
    const auto stored = dataset.storedBytes;
    if (dataset.filters > 0) {
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
    if (dataset.layout == StoredLayout::Contiguous && declaredBytes > 0) {
        if (!dataset.offset || !fitsWithin(*dataset.offset, stored, fileBytes)) {
            return "has its data past the end of the file (offset " +
                   std::to_string(dataset.offset.value_or(-1)) + " + " + std::to_string(stored) +
                   " > " + std::to_string(fileBytes) + " bytes)";
        }
    }
    return std::nullopt;
}

} // namespace ttrace
