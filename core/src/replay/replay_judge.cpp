#include "ttrace/replay/replay_judge.h"

#include "compare/reference_view.h"
#include "ttrace/compare/verdict.h"

#include <algorithm>

namespace ttrace::replay {
namespace {

// One replayed module is one layer of round-off: the analytic fallback (no perturbed variants
// replayed) uses depth 1 for every kind.
constexpr int kReplayDepth = 1;

void prefix(Diagnostics& findings, const std::string& side) {
    for (auto& d : findings) {
        d.location = side + " " + d.location;
    }
}

// Merges every variant of one nominal id; nominal must merge, perturbed ones may be absent.
std::map<std::string, FullTensor> mergeVariants(const TensorId& nominal, ShardGroups& groups,
                                                Diagnostics& findings) {
    std::map<std::string, FullTensor> out;
    for (auto it = groups.begin(); it != groups.end();) {
        auto& [id, shards] = *it;
        if (id.withVariant("nominal") != nominal) {
            ++it;
            continue;
        }
        auto merged = mergeShards(id, std::move(shards));
        prefix(merged.findings, "replayed " + id.variant);
        findings.insert(findings.end(), merged.findings.begin(), merged.findings.end());
        if (merged.tensor) {
            out.emplace(id.variant, std::move(*merged.tensor));
        }
        it = groups.erase(it);
    }
    return out;
}

} // namespace

ShardGroups groupShards(std::vector<ReplayShard> shards) {
    ShardGroups groups;
    for (auto& s : shards) {
        groups[s.id].push_back(std::move(s.shard));
    }
    return groups;
}

TensorJudgement judgeTensor(const TensorId& nominalId, const FullTensor& reference,
                            const std::map<std::string, FullTensor>& replayed,
                            const JudgeSettings& settings) {
    TensorJudgement j;
    j.id = nominalId;
    const auto nominal = replayed.find("nominal");
    if (nominal == replayed.end() || nominal->second.shape != reference.shape) {
        j.status = Status::Invalid;
        j.findings.push_back(
            makeError(DiagnosticCode::ReplayShape, "tensor " + nominalId.path(),
                      nominal == replayed.end()
                          ? std::string("the replay returned no usable nominal tensor")
                          : "replayed shape " + shapeToString(nominal->second.shape) +
                                " vs reference shape " + shapeToString(reference.shape)));
        return j;
    }
    j.metrics = computeMetrics(reference, nominal->second);
    for (const auto& [variant, tensor] : replayed) {
        if (variant != "nominal" && tensor.values.size() == nominal->second.values.size()) {
            j.floorSamples.push_back(relativeError(tensor.values, nominal->second.values));
        }
    }
    ToleranceInput in;
    in.module = nominalId.module;
    in.kind = nominalId.kind;
    in.dtype = reference.dtype;
    in.moduleDepth = kReplayDepth;
    in.maxDepth = kReplayDepth;
    in.precision = settings.precision;
    if (!j.floorSamples.empty()) {
        in.floor = noiseFloor(j.floorSamples);
    }
    j.tolerance = deriveTolerance(settings.tolerance, in);
    j.ratio = toleranceRatio(j.metrics.relError, j.tolerance.value);
    j.status = verdictFor(j.ratio);
    j.histogram = computeErrorHistogram(reference, nominal->second, j.tolerance.value);
    return j;
}

ReplayJudgement judgeReplay(ReplayReply reply, const ReferenceLookup& reference,
                            const JudgeSettings& settings) {
    ReplayJudgement out;
    auto groups = groupShards(std::move(reply.shards));
    std::vector<TensorId> nominals;
    for (const auto& [id, shards] : groups) {
        const auto n = id.withVariant("nominal");
        if (std::find(nominals.begin(), nominals.end(), n) == nominals.end()) {
            nominals.push_back(n);
        }
    }
    std::sort(nominals.begin(), nominals.end());
    for (const auto& id : nominals) {
        TensorJudgement j;
        auto replayed = mergeVariants(id, groups, j.findings);
        auto ref = reference(id);
        prefix(ref.findings, "reference");
        j.findings.insert(j.findings.end(), ref.findings.begin(), ref.findings.end());
        if (!ref.tensor) {
            j.id = id;
            j.status = Status::Missing;
            out.problems.push_back(makeError(DiagnosticCode::NoReferenceTensor,
                                             "tensor " + id.path(),
                                             "the reference bundle cannot provide this tensor"));
        } else {
            auto findings = std::move(j.findings);
            j = judgeTensor(id, *ref.tensor, replayed, settings);
            j.findings.insert(j.findings.begin(), findings.begin(), findings.end());
        }
        if (j.status == Status::Invalid || j.status == Status::Missing) {
            out.judgeable = false;
            out.problems.insert(out.problems.end(), j.findings.begin(), j.findings.end());
        }
        out.maxRatio = std::max(out.maxRatio, j.ratio);
        out.divergent = out.divergent || j.status == Status::Divergent;
        out.tensors.push_back(std::move(j));
    }
    if (out.tensors.empty()) {
        out.judgeable = false;
        out.problems.push_back(
            makeError(DiagnosticCode::EmptyReplay, "replay", "the agent returned no tensors"));
    }
    return out;
}

ReplayJudgement judgeReplay(ReplayReply reply, const Bundle& reference,
                            const ToleranceSettings& tolerance) {
    const JudgeSettings settings{tolerance, reference.manifest().precision};
    return judgeReplay(
        std::move(reply),
        [&reference](const TensorId& id) {
            if (reference.shards(id)) {
                return mergeTensor(reference, id);
            }
            // A hand-off or recompute record the reference lacks is judged against what the
            // diff compared it with (the layer's output, the original forward).
            if (const auto mapped = mappedReference(id); mapped && reference.shards(*mapped)) {
                return mergeTensor(reference, *mapped);
            }
            return MergeResult{};
        },
        settings);
}

} // namespace ttrace::replay
