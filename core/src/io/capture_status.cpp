// Status records of an unfinished capture: reading them, describing the ranks that stopped,
// and opening the tensors of the steps every rank finished.
#include "ttrace/io/capture_status.h"

#include "io/bundle_index.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <regex>
#include <sstream>

namespace ttrace {
namespace {

using nlohmann::json;

constexpr std::uintmax_t kMaxRecordBytes = 1 << 20; // records are a few KiB
constexpr int kMaxWorldSize = 1 << 20;
const std::regex kRecordName(R"(rank-(\d{5,9})\.status\.json)");

std::string rankFileName(int rank) {
    std::ostringstream name;
    name << "rank-" << std::setw(5) << std::setfill('0') << rank << ".h5";
    return name.str();
}

// The record's JSON, or nothing (with an error) when it is not a small regular JSON file.
std::optional<json> loadRecord(const std::filesystem::path& path, Diagnostics& out) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec) ||
        std::filesystem::file_size(path, ec) > kMaxRecordBytes || ec) {
        out.push_back(makeError(DiagnosticCode::BadStatusRecord, path.string(),
                                "is not a regular file of at most 1 MiB"));
        return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    try {
        auto j = json::parse(in);
        if (j.is_object()) {
            return j;
        }
    } catch (const json::exception&) {
    }
    out.push_back(
        makeError(DiagnosticCode::BadStatusRecord, path.string(), "is not a JSON object"));
    return std::nullopt;
}

template <typename T> std::optional<T> field(const json& j, const char* key) {
    if (!j.contains(key)) {
        return std::nullopt;
    }
    try {
        return j.at(key).get<T>();
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

RankCoords coordsOf(const json& j) {
    RankCoords c;
    if (!j.is_object()) {
        return c;
    }
    const auto get = [&](const char* k) { return field<int>(j, k).value_or(0); };
    c.tp = get("tp");
    c.pp = get("pp");
    c.dp = get("dp");
    c.cp = get("cp");
    c.ep = get("ep");
    c.vpp = get("vpp");
    return c;
}

std::set<CaptureStep> stepsOf(const json& j) {
    std::set<CaptureStep> steps;
    if (!j.is_array()) {
        return steps;
    }
    for (const auto& step : j) {
        if (step.is_array() && step.size() == 2 && step[0].is_string() &&
            step[1].is_number_integer()) {
            steps.emplace(step[0].get<std::string>(), step[1].get<std::int64_t>());
        }
    }
    return steps;
}

// One record into `status`; an error naming the record when it cannot be used.
void addRecord(const std::filesystem::path& path, int rankFromName, CaptureStatus& status,
               std::string& captureId, Diagnostics& out) {
    const auto j = loadRecord(path, out);
    if (!j) {
        return;
    }
    const auto rank = field<int>(*j, "rank");
    const auto world = field<int>(*j, "world_size");
    const auto id = field<std::string>(*j, "capture_id");
    if (field<std::string>(*j, "record") != "rank-status" || !rank || !world || !id ||
        *rank != rankFromName || *world < 1 || *world > kMaxWorldSize || *rank >= *world) {
        out.push_back(makeError(DiagnosticCode::BadStatusRecord, path.string(),
                                "lacks a valid record kind, rank, world_size or capture_id"));
        return;
    }
    if (!captureId.empty() && (*id != captureId || *world != status.worldSize)) {
        out.push_back(makeError(DiagnosticCode::MixedCaptures, path.string(),
                                "rank " + std::to_string(*rank) +
                                    "'s status record is from another capture than rank " +
                                    std::to_string(status.ranks.begin()->first) +
                                    "'s; capture again into an empty folder"));
        return;
    }
    if (captureId.empty()) {
        captureId = *id;
        status.worldSize = *world;
        status.role = field<std::string>(*j, "role").value_or("");
        using Sizes = std::map<std::string, int>;
        using Names = std::vector<std::string>;
        status.parallel = field<Sizes>(*j, "parallel").value_or(Sizes{});
        status.precision = field<std::string>(*j, "precision").value_or("fp32");
        status.model = field<std::string>(*j, "model").value_or("");
        status.variants = field<Names>(*j, "variants").value_or(Names{"nominal"});
    }
    RankStatus r;
    r.rank = *rank;
    r.file = rankFileName(*rank);
    r.captureId = *id;
    r.state = field<std::string>(*j, "state").value_or("");
    r.error = field<std::string>(*j, "error").value_or("");
    r.tensors = field<std::int64_t>(*j, "tensors").value_or(0);
    r.lastTensor = field<std::string>(*j, "last_tensor").value_or("");
    r.coords = coordsOf(j->value("coords", json::object()));
    r.stepsDone = stepsOf(j->value("steps_done", json::array()));
    status.ranks.emplace(r.rank, std::move(r));
}

std::string stepList(const std::set<CaptureStep>& steps) {
    std::string out;
    for (const auto& [variant, iteration] : steps) {
        out += (out.empty() ? "" : ", ") + variant + " iteration " + std::to_string(iteration);
    }
    return out.empty() ? "none" : out;
}

// "incomplete: rank N ..." for a rank whose record is not "closed", by how it ended.
std::string rankStopped(int rank, const RankStatus& r) {
    const auto held =
        std::to_string(r.tensors) + " tensors on disk; steps finished: " + stepList(r.stepsDone);
    const auto name = "incomplete: rank " + std::to_string(rank);
    if (r.state == "exited") {
        return name + " exited without tracer.close() (its file is closed and complete: " + held +
               ")";
    }
    const auto what =
        r.lastTensor.empty() ? std::string("before its first tensor") : "after " + r.lastTensor;
    if (r.state == "failed") {
        return name + " failed writing and stopped " + what + " (" + held +
               "): " + (r.error.empty() ? std::string("no reason recorded") : r.error);
    }
    return name + " stopped " + what + " (" + held + ")";
}

std::string rankList(const CaptureStatus& status) {
    std::string out;
    for (const auto& [rank, r] : status.ranks) {
        out += (out.empty() ? "" : ", ") + std::to_string(rank);
    }
    return out;
}

} // namespace

std::set<CaptureStep> CaptureStatus::stepsDoneByAll() const {
    if (static_cast<int>(ranks.size()) != worldSize || ranks.empty()) {
        return {};
    }
    std::set<CaptureStep> common = ranks.begin()->second.stepsDone;
    for (const auto& entry : ranks) {
        const auto& done = entry.second.stepsDone;
        std::erase_if(common, [&](const CaptureStep& s) { return !done.contains(s); });
    }
    return common;
}

bool isUnfinishedCapture(const std::filesystem::path& dir) {
    std::error_code ec;
    if (std::filesystem::exists(dir / "manifest.json", ec) ||
        !std::filesystem::is_directory(dir, ec)) {
        return false;
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        if (std::regex_match(entry.path().filename().string(), kRecordName)) {
            return true;
        }
    }
    return false;
}

std::optional<CaptureStatus> readCaptureStatus(const std::filesystem::path& dir, Diagnostics& out) {
    CaptureStatus status;
    std::string captureId;
    std::error_code ec;
    std::vector<std::pair<int, std::filesystem::path>> records;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        std::smatch match;
        const auto name = entry.path().filename().string();
        if (std::regex_match(name, match, kRecordName)) {
            records.emplace_back(std::stoi(match[1].str()), entry.path());
        }
    }
    std::sort(records.begin(), records.end());
    for (const auto& [rank, path] : records) {
        addRecord(path, rank, status, captureId, out);
    }
    if (status.ranks.empty()) {
        return std::nullopt;
    }
    return status;
}

void describeUnfinishedCapture(const std::filesystem::path& dir, const CaptureStatus& status,
                               Severity severity, Diagnostics& out) {
    const auto make = [severity](DiagnosticCode code, std::string location, std::string message) {
        return severity == Severity::Error
                   ? makeError(code, std::move(location), std::move(message))
                   : makeWarning(code, std::move(location), std::move(message));
    };
    const bool allClosed =
        static_cast<int>(status.ranks.size()) == status.worldSize &&
        std::all_of(status.ranks.begin(), status.ranks.end(),
                    [](const auto& item) { return item.second.state == "closed"; });
    if (allClosed) {
        out.push_back(make(DiagnosticCode::IncompleteCapture, (dir / "manifest.json").string(),
                           "incomplete: every rank closed its file but manifest.json was never "
                           "written (the job stopped inside tracer.close())"));
    }
    for (int rank = 0; rank < status.worldSize && !allClosed; ++rank) {
        const auto it = status.ranks.find(rank);
        const auto loc =
            "rank " + std::to_string(rank) + " (" + (dir / rankFileName(rank)).string() + ")";
        if (it == status.ranks.end()) {
            out.push_back(make(DiagnosticCode::IncompleteCapture, loc,
                               "incomplete: rank " + std::to_string(rank) +
                                   " left no status record (it never started capturing)"));
            continue;
        }
        const auto& r = it->second;
        if (r.state != "closed") {
            out.push_back(make(DiagnosticCode::IncompleteCapture, loc, rankStopped(rank, r)));
        }
    }
}

Diagnostics describeUsablePart(const std::filesystem::path& dir, const ProgressFn& progress) {
    Diagnostics out;
    Diagnostics ignored;
    const auto status = readCaptureStatus(dir, ignored); // its errors: already reported
    if (!status) {
        return out;
    }
    auto partial = openPartialBundle(dir, progress);
    for (auto& d : partial.opened.diagnostics) {
        if (d.severity == Severity::Error) {
            out.push_back(std::move(d)); // e.g. a rank file killed in the middle of a flush
        }
    }
    const auto tensors = partial.opened.bundle ? partial.opened.bundle->tensors().size() : 0;
    const auto ranks = status->ranks.size();
    const auto missing = status->worldSize - static_cast<int>(ranks);
    std::string message = "usable: " + std::to_string(tensors) +
                          " tensors of the steps every rank finished (" +
                          stepList(partial.stepsDone) + "), from the files of " +
                          (ranks > 1 ? "ranks " : "rank ") + rankList(*status);
    if (missing > 0) {
        message += " (" + std::to_string(missing) + " ranks left no record)";
    }
    message += "; " + std::to_string(partial.leftOutTensors) +
               " tensors of unfinished steps left out; `ttrace diff --partial` compares them";
    out.push_back(makeWarning(DiagnosticCode::UsablePart, dir.string(), message));
    return out;
}

PartialBundle openPartialBundle(const std::filesystem::path& dir, const ProgressFn& progress) {
    PartialBundle partial;
    auto& result = partial.opened;
    const auto status = readCaptureStatus(dir, result.diagnostics);
    if (!status) {
        result.diagnostics.push_back(makeError(DiagnosticCode::MissingManifest,
                                               (dir / "manifest.json").string(),
                                               "manifest.json and status records are missing; "
                                               "is this a trace bundle?"));
        return partial;
    }
    describeUnfinishedCapture(dir, *status, Severity::Warning, result.diagnostics);
    Manifest m;
    m.role = status->role;
    m.worldSize = status->worldSize;
    m.parallel = status->parallel;
    m.precision = status->precision;
    m.model = status->model;
    m.variants = status->variants;
    m.producer = "unfinished capture";
    m.unfinished = true;
    for (const auto& [rank, r] : status->ranks) {
        RankEntry e;
        e.rank = rank;
        e.file = r.file;
        e.coords = r.coords; // counts, size and CRC are unknown until a rank closes its file
        m.ranks.push_back(std::move(e));
    }
    partial.stepsDone = status->stepsDoneByAll();
    for (const auto& [variant, iteration] : partial.stepsDone) {
        if (std::find(m.iterations.begin(), m.iterations.end(), iteration) == m.iterations.end()) {
            m.iterations.push_back(iteration);
        }
    }
    const auto& done = partial.stepsDone;
    indexBundle(
        dir, std::move(m), progress,
        [&done](const TensorId& id) {
            return done.contains({id.variant, id.iteration});
        },
        result, partial.leftOutTensors);
    return partial;
}

} // namespace ttrace
