#pragma once
// An unfinished capture: a bundle directory with rank status records (rank-NNNNN.status.json)
// and no manifest.json, because the job stopped before tracer.close() wrote it. The records
// say how far each rank got; the tensors of steps every rank finished can still be compared
// (`ttrace diff --partial`). Format: docs/bundle-format.md ("Status records").
#include "ttrace/io/bundle.h"
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/manifest.h"
#include "ttrace/io/progress.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ttrace {

using CaptureStep = std::pair<std::string, std::int64_t>; // (variant, iteration)

struct RankStatus {
    int rank = 0;
    std::string file;
    std::string captureId;
    // "capturing"; "closed" (by tracer.close()); "exited" (closed at process exit without
    // tracer.close(): the file holds everything); "failed" (a write failed: `error` says
    // what, the file holds its last flush).
    std::string state;
    std::string error;
    std::int64_t tensors = 0;
    std::string lastTensor;
    RankCoords coords;
    std::set<CaptureStep> stepsDone;
};

struct CaptureStatus {
    std::string role;
    int worldSize = 0;
    std::map<std::string, int> parallel;
    std::string precision;
    std::string model;
    std::vector<std::string> variants;
    std::map<int, RankStatus> ranks; // by rank; ranks without a record are absent
    // Steps every rank of the world finished: their tensors are complete.
    [[nodiscard]] std::set<CaptureStep> stepsDoneByAll() const;
};

// True when `dir` has no manifest.json but holds status records (a capture that never
// finished). Cheap: one directory listing.
bool isUnfinishedCapture(const std::filesystem::path& dir);

// Reads every status record of `dir`; nothing (and errors naming the record) when none can
// be used. Records are bounded in size and must agree on the capture they describe.
std::optional<CaptureStatus> readCaptureStatus(const std::filesystem::path& dir, Diagnostics& out);

// One "incomplete-capture" finding per rank that did not finish ("incomplete: rank N
// stopped after <tensor>"), with the given severity.
void describeUnfinishedCapture(const std::filesystem::path& dir, const CaptureStatus& status,
                               Severity severity, Diagnostics& out);

// What of an unfinished capture can be compared, for `ttrace validate`: one "usable-part"
// warning ("usable: N tensors of the steps every rank finished (...), M left out"), plus the
// errors that opening those tensors meets (a rank file that cannot be read).
Diagnostics describeUsablePart(const std::filesystem::path& dir, const ProgressFn& progress = {});

struct PartialBundle {
    BundleOpenResult opened;
    std::set<CaptureStep> stepsDone; // the steps whose tensors the bundle holds
    std::size_t leftOutTensors = 0;  // tensors on disk of steps some rank did not finish
};

// Opens an unfinished capture with only the tensors of steps that every rank finished.
PartialBundle openPartialBundle(const std::filesystem::path& dir, const ProgressFn& progress = {});

} // namespace ttrace
