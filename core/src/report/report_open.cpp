#include "ttrace/report/report_open.h"

#include "compare/tensor_json.h"
#include "ttrace/compare/report_json.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <new>
#include <system_error>

namespace ttrace {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

ReportOpenFailure failure(ReportOpenError code, const fs::path& file, std::string detail) {
    return {code, file, std::move(detail)};
}

// The file's bytes, or why not. Only regular files are read (a FIFO would block forever).
std::optional<ReportOpenFailure> readText(const fs::path& file, bool isCache, std::string& text) {
    const auto cannotRead =
        isCache ? ReportOpenError::CacheCannotRead : ReportOpenError::CannotRead;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
        return failure(cannotRead, file,
                       fs::exists(file, ec) ? "not a regular file" : "no such file");
    }
    const auto size = fs::file_size(file, ec);
    if (ec) {
        return failure(cannotRead, file, ec.message());
    }
    if (size > kMaxReportBytes) {
        return failure(ReportOpenError::TooLarge, file,
                       std::to_string(size) + " bytes, more than any report holds");
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return failure(cannotRead, file, "cannot be opened for reading");
    }
    try {
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::bad_alloc&) {
        return failure(ReportOpenError::TooLarge, file, "not enough memory to read it");
    }
    if (in.bad()) {
        return failure(cannotRead, file, "a read failed");
    }
    if (text.empty()) {
        return failure(isCache ? ReportOpenError::CacheMalformed : ReportOpenError::Empty, file,
                       "the file is empty");
    }
    return std::nullopt;
}

// A summary cache entry is the key as a JSON string on its first line, then the document
// (diff_cache.cpp); a report starts with '{'. Splits off the key when there is one.
std::optional<std::string> splitCacheKey(std::string& text, std::string& error) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || text[first] != '"') {
        return std::nullopt;
    }
    const auto eol = text.find('\n', first);
    const json key = json::parse(text.substr(first, eol == std::string::npos ? eol : eol - first),
                                 nullptr, false);
    if (!key.is_string()) {
        error = "its first line is not a cache key";
        return std::string();
    }
    text.erase(0, eol == std::string::npos ? text.size() : eol + 1);
    return key.get<std::string>();
}

struct Parsed {
    std::optional<DiffResult> result;
    std::string key; // the cache key line, when the file is a cache entry
    std::optional<ReportOpenFailure> failure;
};

Parsed parseReport(const fs::path& file, std::string text, bool isCache) {
    Parsed out;
    std::string keyError;
    const auto key = splitCacheKey(text, keyError);
    const auto malformed = isCache ? ReportOpenError::CacheMalformed : ReportOpenError::Malformed;
    if (!keyError.empty() || (isCache && !key)) {
        out.failure =
            failure(malformed, file,
                    keyError.empty() ? "no cache key line: not a summary cache entry" : keyError);
        return out;
    }
    out.key = key.value_or(std::string());
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) {
        out.failure = failure(isCache ? malformed : ReportOpenError::NotJson, file,
                              "not a complete JSON document (truncated or not JSON)");
        return out;
    }
    if (!isDiffDocument(doc)) {
        out.failure = failure(
            isCache ? malformed : ReportOpenError::WrongSchema, file,
            "not a ttrace-diff document of schema version " + std::to_string(kDiffJsonVersion) +
                " (schema " + (doc.is_object() ? doc.value("schema", json()).dump() : "none") +
                ", version " +
                (doc.is_object() ? doc.value("schema_version", json()).dump() : "none") + ")");
        return out;
    }
    std::string error;
    out.result = diffResultFromDocument(doc, error);
    if (!out.result) {
        out.failure = failure(malformed, file, error);
    }
    return out;
}

Parsed readAndParse(const fs::path& file, bool isCache) {
    std::string text;
    if (auto bad = readText(file, isCache, text)) {
        Parsed out;
        out.failure = std::move(bad);
        return out;
    }
    return parseReport(file, std::move(text), isCache);
}

ReportOpenOutcome open(const fs::path& report, const fs::path& cache) {
    ReportOpenOutcome outcome;
    auto parsed = readAndParse(report, false);
    if (parsed.failure) {
        outcome.failure = std::move(parsed.failure);
        return outcome;
    }
    OpenedReport opened{std::move(*parsed.result), report, {}, std::move(parsed.key)};
    if (!cache.empty()) {
        auto entry = readAndParse(cache, true);
        if (entry.failure) {
            outcome.failure = std::move(entry.failure);
            return outcome;
        }
        // Compared as the documents this build writes: formatting and field order of the
        // two files may differ, what they say may not.
        if (diffResultToJson(*entry.result, false) != diffResultToJson(opened.result, false)) {
            outcome.failure = failure(ReportOpenError::CacheMismatch, cache,
                                      "it holds another comparison than " + report.string() +
                                          " (a different pair, options or version of the bundles)");
            return outcome;
        }
        opened.cache = cache;
        opened.cacheKey = std::move(entry.key);
    }
    outcome.opened = std::move(opened);
    return outcome;
}

} // namespace

std::string ReportOpenFailure::message() const {
    const bool isCache = code == ReportOpenError::CacheCannotRead ||
                         code == ReportOpenError::CacheMalformed ||
                         code == ReportOpenError::CacheMismatch;
    return std::string(isCache ? "cannot use the cache entry " : "cannot open the report ") +
           file.string() + ": " + detail;
}

ReportOpenOutcome openDiffReport(const fs::path& report, const fs::path& cache) {
    // The boundary for untrusted files: whatever escapes the readers is a malformed file.
    try {
        return open(report, cache);
    } catch (const std::bad_alloc&) {
        return {std::nullopt, failure(ReportOpenError::TooLarge, report, "not enough memory")};
    } catch (const std::exception& e) {
        return {std::nullopt, failure(ReportOpenError::Malformed, report, e.what())};
    }
}

} // namespace ttrace
