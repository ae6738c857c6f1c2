#pragma once
// Files of a bundle are read only when they are regular files: a FIFO would block every tool
// forever, a directory or device would throw or read without end.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace ttrace {

enum class FileKind { Missing, Regular, Directory, Fifo, Other };

// What `path` is, following symlinks (a link to /dev/zero is a device, not a file).
FileKind fileKind(const std::filesystem::path& path);
// "a directory", "a FIFO (named pipe)", ... for messages.
const char* fileKindName(FileKind kind);

struct SmallFile {
    std::string text;
    std::string error; // why it could not be read; empty on success
};

// Reads a regular file of at most `maxBytes` without ever blocking on it: opened non-blocking,
// checked with fstat on the open descriptor (no race with a rename), then read in full.
SmallFile readSmallFile(const std::filesystem::path& path, std::int64_t maxBytes);

} // namespace ttrace
