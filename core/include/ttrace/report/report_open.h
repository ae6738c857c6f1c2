#pragma once
// Opening a finished comparison without its bundles: the JSON that `ttrace diff --json` or
// `ttrace-mpi diff --json` wrote (docs/diff-json.md), or a summary cache entry (the same
// document after its key line), optionally checked against a cache entry of the same pair.
// This is how a desktop opens what a cluster computed: everything the report holds (verdicts,
// modules, statistics, histograms, warnings) is shown; element-level reads are not possible.
// The input is untrusted (a file copied by hand, truncated by a full disk, from another
// version): every failure is a typed error naming the file, never an exception or a crash.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/name_table.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ttrace {

// The one sentence every front end shows where it would read elements from the bundles.
inline constexpr std::string_view kReportOnlyReason =
    "the bundles are not here: opened from a report, which holds each tensor's statistics but "
    "not its elements (open the two bundles for element-level drill-down)";

// Reports larger than this are refused before reading (a report of a 1 TB pair is about
// 0.6 GB; a file far larger is not a report).
inline constexpr std::uintmax_t kMaxReportBytes = std::uintmax_t{4} << 30;

enum class ReportOpenError : std::uint8_t {
    CannotRead,      // missing, a directory, unreadable
    TooLarge,        // over kMaxReportBytes
    Empty,           // zero bytes
    NotJson,         // not a JSON document (or truncated)
    WrongSchema,     // JSON, but not a ttrace-diff document of the version this build reads
    Malformed,       // the schema, with fields missing, of the wrong type or out of range
    CacheCannotRead, // the cache entry given beside the report cannot be read
    CacheMalformed,  // the cache entry has no key line or its document is broken
    CacheMismatch,   // the cache entry holds another result than the report
};
inline constexpr NameTable kReportOpenErrorNames{
    ReportOpenError::CacheMismatch, std::array<std::pair<ReportOpenError, std::string_view>, 9>{{
                                        {ReportOpenError::CannotRead, "cannot-read"},
                                        {ReportOpenError::TooLarge, "too-large"},
                                        {ReportOpenError::Empty, "empty"},
                                        {ReportOpenError::NotJson, "not-json"},
                                        {ReportOpenError::WrongSchema, "wrong-schema"},
                                        {ReportOpenError::Malformed, "malformed"},
                                        {ReportOpenError::CacheCannotRead, "cache-cannot-read"},
                                        {ReportOpenError::CacheMalformed, "cache-malformed"},
                                        {ReportOpenError::CacheMismatch, "cache-mismatch"},
                                    }}};

struct ReportOpenFailure {
    ReportOpenError code = ReportOpenError::CannotRead;
    std::filesystem::path file; // the file at fault
    std::string detail;         // what was wrong with it
    // "cannot open the report FILE: DETAIL" (or "the cache entry FILE").
    [[nodiscard]] std::string message() const;
};

struct OpenedReport {
    DiffResult result;
    std::filesystem::path report;
    std::filesystem::path cache; // empty when no cache entry was given or read
    // The summary cache key (the CRC-32 of every file of both bundles) when the report was a
    // cache entry or came with one; empty otherwise. It can vouch for bundles opened later.
    std::string cacheKey;
};

// Exactly one of the two is set.
struct ReportOpenOutcome {
    std::optional<OpenedReport> opened;
    std::optional<ReportOpenFailure> failure;
};

// Reads `report` (a diff JSON or a cache entry) and, when `cache` is not empty, the cache entry
// that must hold the same result. Never throws.
[[nodiscard]] ReportOpenOutcome openDiffReport(const std::filesystem::path& report,
                                               const std::filesystem::path& cache = {});

} // namespace ttrace
