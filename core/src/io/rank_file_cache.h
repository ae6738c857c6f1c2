#pragma once
// What opening a rank file learns from reading all of it, kept on disk so the next open of the
// same unchanged file skips the work: its CRC-32 (a read of every byte) and libhdf5's facts (a
// child process, ttrace-index). One small entry per file and kind in the user's cache
// directory ($XDG_CACHE_HOME/ttrace/rank-files, else ~/.cache/ttrace/rank-files).
//
// An entry is used only when the file's stamp (device, inode, size, modification and change
// time) is the one it was computed under; the change time cannot be set by a user, so any write
// to the file invalidates it. An entry that is unreadable, damaged (its own CRC-32), written by
// another indexer build, or for another path is ignored and recomputed, never trusted. Entries
// are written only for files whose times lie a few seconds in the past: a file written again
// within the file system's time granularity could otherwise keep its stamp ("racy" stamps).
// TTRACE_NO_RANK_FILE_CACHE=1 turns the cache off.
#include "io/file_stamp.h"
#include "io/rank_facts.h"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace ttrace {

std::optional<std::uint32_t> cachedFileCrc(const std::filesystem::path& file,
                                           const FileStamp& stamp);
void storeFileCrc(const std::filesystem::path& file, const FileStamp& stamp, std::uint32_t crc);

// Facts as the indexer at `helper` extracted them (its size and modification time are part of
// the entry: a rebuilt or upgraded indexer recomputes them).
std::optional<RankFacts> cachedRankFacts(const std::filesystem::path& file, const FileStamp& stamp,
                                         const std::filesystem::path& helper);
void storeRankFacts(const std::filesystem::path& file, const FileStamp& stamp,
                    const std::filesystem::path& helper, const RankFacts& facts);

} // namespace ttrace
