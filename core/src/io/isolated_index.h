#pragma once
// Indexing an untrusted rank file in a child process (ttrace-index): libhdf5 1.10 segfaults or
// loops on some corrupt metadata, which no check in the tool can prevent in-process. The child
// parses the file; the tool gets plain facts back, or a typed error naming the file.
#include "io/rank_facts.h"
#include "ttrace/io/diagnostic_code.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace ttrace {

struct IsolatedIndex {
    std::optional<RankFacts> facts;
    DiagnosticCodeValue code = DiagnosticCode::IndexFailed; // when there are no facts
    std::string message;                                    // what happened, naming the file
};

// The helper: $TTRACE_INDEX_HELPER, else ttrace-index next to the running program.
std::filesystem::path indexHelperPath();
// $TTRACE_INDEX_TIMEOUT_S seconds (default 120): a rank file's metadata is indexed in well
// under a second; this only ends a child that loops.
std::chrono::milliseconds indexTimeout();

// Runs the helper on `file` (of `fileBytes` bytes) and decodes what it prints.
IsolatedIndex indexInChild(const std::filesystem::path& file, std::int64_t fileBytes);

// The same facts, taken from the rank-file cache (rank_file_cache.h) when an earlier run of
// this indexer build saw the file as it is now; else from the helper, and then kept there.
IsolatedIndex indexReusingCache(const std::filesystem::path& file, std::int64_t fileBytes);

} // namespace ttrace
