#pragma once
// The options of `ttrace diff`, parsed and reported the same way by every front end that runs a
// diff from a command line (`ttrace diff`, `ttrace-mpi diff`).
#include "ttrace/compare/diff_engine.h"

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ttrace::cli {

struct DiffArgs {
    std::vector<std::string> bundles;
    std::string json, markdown;
    DiffOptions options;
    std::size_t top = 10;
    bool quiet = false;
};

// The usage text, e.g. for `command` "ttrace diff".
std::string diffUsage(std::string_view command);
bool wantsHelp(std::span<const std::string_view> args);
// Returns an error message, or empty on success.
std::string parseDiffArgs(std::span<const std::string_view> args, DiffArgs& a);

// Writes the JSON and Markdown files asked for, prints the summary (or the verdict alone with
// --quiet) and the diagnostics; returns the exit code (0 clean, 1 divergent, 2 invalid).
int reportDiff(const DiffResult& result, const DiffArgs& a, std::string_view command);

} // namespace ttrace::cli
