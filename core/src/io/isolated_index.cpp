#include "io/isolated_index.h"

#include "io/child_process.h"
#include "io/file_stamp.h"
#include "io/index_wire.h"
#include "io/rank_file_cache.h"
#include "io/utf8.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string.h>

namespace ttrace {
namespace {

// The facts are a few hundred bytes per dataset; attributes are bounded by the file itself
// (an int8 array attribute is 8 bytes per value on the wire), so the output is too.
std::size_t outputLimit(std::int64_t fileBytes) {
    constexpr std::int64_t kBase = std::int64_t{64} << 20;
    constexpr std::int64_t kMax = std::int64_t{1} << 30;
    const auto scaled = std::min(std::max<std::int64_t>(fileBytes, 0), kMax / 8) * 8;
    return static_cast<std::size_t>(kBase + scaled);
}

std::string secondsText(std::chrono::milliseconds ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ms.count()) / 1000.0);
    return buf;
}

IsolatedIndex failure(DiagnosticCode code, std::string message) {
    return {std::nullopt, code, std::move(message)};
}

} // namespace

std::filesystem::path indexHelperPath() {
    if (const char* env = std::getenv("TTRACE_INDEX_HELPER"); env && *env) {
        return env;
    }
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
        return "ttrace-index";
    }
    // Installed, the helper is next to the program. In a build tree, test and bench programs
    // sit in their own folders (tests/bin, bench) and the helper in bin/ above them.
    auto dir = self.parent_path();
    const auto beside = dir / "ttrace-index";
    for (int up = 0; up < 3 && !std::filesystem::exists(beside, ec); ++up) {
        dir = dir.parent_path();
        if (const auto candidate = dir / "bin" / "ttrace-index";
            std::filesystem::exists(candidate, ec)) {
            return candidate;
        }
    }
    return beside;
}

std::chrono::milliseconds indexTimeout() {
    if (const char* env = std::getenv("TTRACE_INDEX_TIMEOUT_S"); env && *env) {
        char* end = nullptr;
        const double seconds = std::strtod(env, &end);
        if (end != env && seconds > 0 && seconds < 1e6) {
            return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
        }
    }
    return std::chrono::seconds(120);
}

IsolatedIndex indexInChild(const std::filesystem::path& file, std::int64_t fileBytes) {
    const auto helper = indexHelperPath();
    const auto name = escapeInvalidUtf8(file.string());
    const auto timeout = indexTimeout();
    const auto run = runChild(helper, {file.string()}, outputLimit(fileBytes), timeout);
    using Outcome = ChildResult::Outcome;
    switch (run.outcome) {
    case Outcome::SpawnFailed:
        return failure(DiagnosticCode::IndexHelperMissing,
                       run.error + " (the rank-file indexer ttrace-index is installed next to "
                                   "ttrace; TTRACE_INDEX_HELPER names another)");
    case Outcome::Signalled:
        return failure(DiagnosticCode::IndexCrashed,
                       "libhdf5 crashed reading " + name + ": exited with signal " +
                           std::to_string(run.status) + " (" + strsignal(run.status) +
                           "); the file's metadata is corrupt");
    case Outcome::TimedOut:
        return failure(DiagnosticCode::IndexTimeout,
                       "libhdf5 timed out reading " + name + " (no answer in " +
                           secondsText(timeout) +
                           " s, TTRACE_INDEX_TIMEOUT_S); the file's metadata is corrupt");
    case Outcome::TooMuchOutput:
        return failure(DiagnosticCode::IndexFailed,
                       "indexing " + name + " produced more output than the file can describe");
    case Outcome::Exited: break;
    }
    if (run.status != 0) {
        return failure(DiagnosticCode::IndexFailed, "libhdf5 failed reading " + name +
                                                        ": the indexer exited with status " +
                                                        std::to_string(run.status));
    }
    std::string why;
    auto facts = decodeRankFacts(run.output, why);
    if (!facts) {
        return failure(DiagnosticCode::IndexFailed, "indexing " + name + " failed: " + why);
    }
    IsolatedIndex out;
    out.facts = std::move(facts);
    return out;
}

IsolatedIndex indexReusingCache(const std::filesystem::path& file, std::int64_t fileBytes) {
    const auto helper = indexHelperPath();
    const auto stamp = stampOf(file);
    if (stamp) {
        if (auto facts = cachedRankFacts(file, *stamp, helper)) {
            IsolatedIndex out;
            out.facts = std::move(facts);
            return out;
        }
    }
    auto run = indexInChild(file, fileBytes);
    // Only what the indexer answered is kept: a crash or a timeout is tried again next time.
    if (run.facts && stamp) {
        storeRankFacts(file, *stamp, helper, *run.facts);
    }
    return run;
}

} // namespace ttrace
