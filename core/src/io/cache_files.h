#pragma once
// File handling shared by the summary cache's entries and its fingerprint pointers: where the
// per-user cache directory is, short file names from long keys, durable writes and pruning.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace ttrace {

// $XDG_CACHE_HOME/ttrace, else ~/.cache/ttrace; empty when neither variable is set.
[[nodiscard]] std::filesystem::path userCacheDir();

// FNV-1a 64 of `text` as 16 hex digits: a file name, not a security boundary (every reader
// compares the full key stored inside the file).
[[nodiscard]] std::string hexHash(const std::string& text);

// Writes `text` to a temporary file beside `file`, fsyncs it and renames it over `file`: a
// reader sees the old file or the complete new one, never half of one, even after a crash.
bool writeAtomically(const std::filesystem::path& file, const std::string& text);

// Removes all but the `keep` newest (by modification time) files of `dir` whose names start
// with `prefix` and end with `suffix`; other files are left alone.
void pruneFiles(const std::filesystem::path& dir, std::string_view prefix, std::string_view suffix,
                std::size_t keep);

} // namespace ttrace
