#pragma once
// Judging a replay (docs/tolerance.md, "Localize"): the returned shards are merged with the
// same mergeShards that merges captured ones, then each replayed tensor is compared with the
// reference's. The tolerance is this module's own round-off in this layout, measured: the
// spread of the replay when fed the reference's perturbed variants instead of its nominal
// inputs, through the existing empirical rule (empiricalTolerance).
#include "ttrace/compare/diff_result.h"
#include "ttrace/compare/histogram.h"
#include "ttrace/compare/metrics.h"
#include "ttrace/compare/tolerance.h"
#include "ttrace/io/bundle.h"
#include "ttrace/merge/merge.h"
#include "ttrace/replay/replay_reply.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ttrace::replay {

struct JudgeSettings {
    ToleranceSettings tolerance; // overrides and the safety factor apply as in `ttrace diff`
    std::string precision;       // the reference's recipe (eps of the analytic fallback)
};

struct TensorJudgement {
    TensorId id;                      // variant "nominal"
    Status status = Status::Clean;    // Missing: no reference tensor; Invalid: cannot merge
    TensorMetrics metrics;            // replayed nominal vs reference nominal
    std::vector<double> floorSamples; // relErr(replayed perturbed-k, replayed nominal)
    Tolerance tolerance;
    double ratio = 0.0; // metrics.relError / tolerance.value
    // Element errors of the replayed nominal against the reference, in units of this replay's
    // tolerance: the same histogram the diff draws for the captured tensor, so the two can be
    // shown side by side (the divergence vanishes or persists given the reference's inputs).
    ErrorHistogram histogram;
    Diagnostics findings;
};

struct ReplayJudgement {
    std::vector<TensorJudgement> tensors; // sorted by id
    double maxRatio = 0.0;
    bool divergent = false; // some tensor exceeds its tolerance given the reference's inputs
    bool judgeable = true;  // false when a tensor could not be compared (see problems)
    Diagnostics problems;
};

// Shards of one reply grouped by tensor (variant included).
using ShardGroups = std::map<TensorId, std::vector<RawShard>>;
ShardGroups groupShards(std::vector<ReplayShard> shards);

// One tensor: `replayed` maps variant -> merged replay ("nominal" required).
TensorJudgement judgeTensor(const TensorId& nominalId, const FullTensor& reference,
                            const std::map<std::string, FullTensor>& replayed,
                            const JudgeSettings& settings);

// Looks up the reference's merged tensor of a nominal id (a bundle, or a test's table).
using ReferenceLookup = std::function<MergeResult(const TensorId&)>;

ReplayJudgement judgeReplay(ReplayReply reply, const ReferenceLookup& reference,
                            const JudgeSettings& settings);
ReplayJudgement judgeReplay(ReplayReply reply, const Bundle& reference,
                            const ToleranceSettings& tolerance);

} // namespace ttrace::replay
