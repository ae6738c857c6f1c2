#include "io/file_integrity.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <vector>

namespace ttrace {

std::optional<std::uint32_t> fileCrc32(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::vector<char> buffer(std::size_t{1} << 22);
    uLong crc = crc32(0L, Z_NULL, 0);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        const auto got = in.gcount();
        if (got > 0) {
            crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(got));
        }
    }
    if (in.bad()) {
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(crc);
}

std::optional<IntegrityProblem> checkFileIntegrity(const std::filesystem::path& file,
                                              std::int64_t expectedSize,
                                              std::optional<std::uint32_t> expectedCrc) {
    std::error_code ec;
    const auto size = static_cast<std::int64_t>(std::filesystem::file_size(file, ec));
    if (ec) {
        return IntegrityProblem{IntegrityFailure::Unreadable,
                                "its size cannot be read (" + ec.message() + ")"};
    }
    if (expectedSize >= 0 && size != expectedSize) {
        return IntegrityProblem{
            IntegrityFailure::WrongSize,
            std::string(size < expectedSize ? "is truncated" : "is longer than written") + ": " +
                std::to_string(size) + " bytes, the manifest records " +
                std::to_string(expectedSize) + "; copy it again"};
    }
    if (!expectedCrc) {
        return std::nullopt;
    }
    const auto crc = fileCrc32(file);
    if (!crc) {
        return IntegrityProblem{IntegrityFailure::Unreadable, "cannot be read"};
    }
    if (*crc != *expectedCrc) {
        char text[64];
        std::snprintf(text, sizeof text, "CRC-32 %08x, the manifest records %08x", *crc,
                      *expectedCrc);
        return IntegrityProblem{IntegrityFailure::WrongCrc,
                                std::string("is damaged: ") + text +
                                    " (bytes changed in copying?); copy it again"};
    }
    return std::nullopt;
}

} // namespace ttrace
