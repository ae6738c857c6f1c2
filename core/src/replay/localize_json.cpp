#include "ttrace/replay/localize_report.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace ttrace::replay {
namespace {

using nlohmann::json;

// JSON has no infinity: non-finite numbers are written as null, meaning +inf (docs/diff-json.md).
json num(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

json toJson(const Diagnostics& ds) {
    json a = json::array();
    for (const auto& d : ds) {
        a.push_back({{"severity", d.severity == Severity::Error ? "error" : "warning"},
                     {"code", d.code.name()},
                     {"location", d.location},
                     {"message", d.message}});
    }
    return a;
}

// The same fields as a diff tensor's histogram (docs/diff-json.md), in replay-tolerance units.
json toJson(const ErrorHistogram& h) {
    return {{"edges", h.edges},
            {"counts", h.counts},
            {"exact_zero", h.exactZero},
            {"non_finite", h.nonFinite}};
}

json toJson(const TensorJudgement& t) {
    json samples = json::array();
    for (const double f : t.floorSamples) {
        samples.push_back(num(f));
    }
    return {{"variant", t.id.variant},
            {"iteration", t.id.iteration},
            {"micro_batch", t.id.microBatch},
            {"module", t.id.module},
            {"kind", tensorKindName(t.id.kind)},
            {"index", t.id.index},
            {"status", statusName(t.status)},
            {"rel_error", num(t.metrics.relError)},
            {"max_abs_error", num(t.metrics.maxAbsError)},
            {"cosine", num(t.metrics.cosine)},
            {"tolerance", num(t.tolerance.value)},
            {"tolerance_source", t.tolerance.source.name()},
            {"floor_samples", samples},
            {"floor_mean", num(t.tolerance.floorMean)},
            {"floor_spread", num(t.tolerance.floorSpread)},
            {"ratio", num(t.ratio)},
            {"histogram", toJson(t.histogram)},
            {"findings", toJson(t.findings)}};
}

json toJson(const ModuleVerdict& v) {
    json tensors = json::array();
    for (const auto& t : v.judgement.tensors) {
        tensors.push_back(toJson(t));
    }
    return {{"module", v.suspect.module},
            {"phase", localizePhaseName(v.suspect.phase)},
            {"iteration", v.suspect.iteration},
            {"micro_batch", v.suspect.microBatch},
            {"level", v.level},
            {"verdict", verdictName(v.verdict)},
            {"reason", v.reason},
            {"ratio", num(v.ratio)},
            {"diff_ratio", num(v.suspect.diffRatio)},
            {"agent_seconds", num(v.agentSeconds)},
            {"seconds", num(v.seconds)},
            {"tensors", tensors}};
}

} // namespace

std::string localizeResultToJson(const LocalizeResult& r, const LocalizeContext& c) {
    json verdicts = json::array();
    for (const auto& v : r.verdicts) {
        verdicts.push_back(toJson(v));
    }
    json doc = {
        {"schema", kLocalizeJsonSchema},
        {"schema_version", kLocalizeJsonVersion},
        {"reference", c.reference},
        {"candidate", c.candidate},
        {"agent", {{"endpoint", c.endpoint}, {"name", c.agent}, {"world_size", c.worldSize}}},
        {"start", r.start ? json{{"iteration", r.start->iteration},
                                 {"phase", localizePhaseName(r.start->phase)}}
                          : json(nullptr)},
        {"verdicts", verdicts},
        {"guilty", r.guilty},
        {"guilty_phase", r.guiltyPhase ? json(localizePhaseName(*r.guiltyPhase)) : json(nullptr)},
        {"guilty_parameters", r.guiltyParameters},
        {"entry", r.entry ? json{{"iteration", r.entry->iteration},
                                 {"micro_batch", r.entry->microBatch},
                                 {"module", r.entry->module},
                                 {"kind", tensorKindName(r.entry->kind)},
                                 {"index", r.entry->index}}
                          : json(nullptr)},
        {"clipping", r.clipping ? json{{"iteration", r.clipping->iteration},
                                       {"factor", num(r.clipping->factor)},
                                       {"consistent", r.clipping->consistent},
                                       {"text", r.clipping->toString()}}
                                : json(nullptr)},
        {"introduced", r.introduced()},
        {"undetermined", r.undetermined()},
        {"conclusion", localizeConclusion(r)},
        {"problems", toJson(r.problems)},
        {"cancelled", r.cancelled},
        {"seconds", num(r.seconds)},
    };
    return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace ttrace::replay
