#pragma once
// Size and CRC-32 check of a rank file against its manifest entry, done before the HDF5
// library parses the file: HDF5 1.10 can crash on corrupt metadata (e.g. a damaged global
// heap behind a variable-length string), and a bundle copied from a cluster can arrive damaged.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace ttrace {

// CRC-32 (zlib's polynomial) of the file's bytes, or nothing if it cannot be read. Pieces of
// the file are checksummed in parallel and combined; a file this process, or an earlier one
// (rank_file_cache.h), already checksummed, unchanged since (same device, inode, size, mtime and
// ctime), is not read again.
std::optional<std::uint32_t> fileCrc32(const std::filesystem::path& file);

// The same checksum read in pieces of `pieceBytes` (> 0), without the memo: fileCrc32 uses
// 8 MiB pieces.
std::optional<std::uint32_t> fileCrc32InPieces(const std::filesystem::path& file,
                                               std::size_t pieceBytes);

enum class IntegrityFailure {
    Unreadable, // the file's size or bytes cannot be read
    WrongSize,  // shorter (truncated) or longer than written
    WrongCrc,   // same size, other bytes: damaged in copying
};

struct IntegrityProblem {
    IntegrityFailure kind = IntegrityFailure::Unreadable;
    std::string message; // completes "<file> ...", e.g. "is truncated: 10 bytes, ..."
};

// Why the file does not match the recorded size/CRC-32 (either may be absent), or nothing.
std::optional<IntegrityProblem> checkFileIntegrity(const std::filesystem::path& file,
                                                   std::int64_t expectedSize,
                                                   std::optional<std::uint32_t> expectedCrc);

} // namespace ttrace
