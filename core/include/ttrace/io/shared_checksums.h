#pragma once
// CRC-32s of rank files shared between the processes of one job: opening a bundle checks every
// rank file's CRC-32 (and the summary cache's key reads every byte), which would make each
// process read the whole pair. Instead each process checksums a share of the files and adopts
// the others' results, for files its own stat shows unchanged since they were read.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace ttrace {

struct FileChecksum {
    std::string path; // as this process names it
    std::int64_t size = 0;
    std::int64_t mtimeNs = 0; // modification and change times when it was read
    std::int64_t ctimeNs = 0;
    std::uint32_t crc = 0;
};

// The file's CRC-32 with the stat it was read under; nothing when it cannot be read or changed
// while being read.
std::optional<FileChecksum> checksumToShare(const std::filesystem::path& file);

// Remembers another process's checksum for this process's checks (the open's integrity check,
// the summary cache's key) if the file's size and times here are the ones it was read under;
// returns whether it was adopted (if not, this process reads the file itself when needed).
bool adoptChecksum(const FileChecksum& checksum);

} // namespace ttrace
