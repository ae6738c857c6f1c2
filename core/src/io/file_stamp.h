#pragma once
// What the kernel says about a file: device, inode, size, modification and change times. The
// change time (ctime) cannot be set by a user (os.utime restores mtime, not ctime), so a file
// whose stamp is unchanged has not been written since it was stamped.
#include <sys/types.h>

#include <filesystem>
#include <optional>

namespace ttrace {

struct FileStamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    long long mtimeNs = 0;
    long long ctimeNs = 0;
    bool operator==(const FileStamp&) const = default;
};

// The stamp of `file` (following symlinks), or nothing when it cannot be stat'ed.
std::optional<FileStamp> stampOf(const std::filesystem::path& file);

} // namespace ttrace
