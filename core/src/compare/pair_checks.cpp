#include "compare/pair_checks.h"

#include <string>
#include <tuple>
#include <vector>

namespace ttrace {
namespace {

// A byte-identical copy: every rank file's size and CRC-32 equal.
bool sameContent(const Bundle& a, const Bundle& b) {
    const auto& ra = a.manifest().ranks;
    const auto& rb = b.manifest().ranks;
    if (ra.empty() || ra.size() != rb.size()) {
        return false;
    }
    for (std::size_t i = 0; i < ra.size(); ++i) {
        if (!ra[i].crc32 || ra[i].fileSize < 0 ||
            std::tie(ra[i].file, ra[i].fileSize, ra[i].crc32) !=
                std::tie(rb[i].file, rb[i].fileSize, rb[i].crc32)) {
            return false;
        }
    }
    return true;
}

// Whether an alternative the capture recorded for an inferred placement rebuilds `shape` (a
// parameter nothing declares over tensor parallelism: the comparison settles it).
bool alternativeOfShape(const std::vector<ShardRef>& shards, const Shape& shape) {
    for (const auto& alternative : shards.front().alternatives) {
        if (alternative.placement.globalShape == shape) {
            return true;
        }
    }
    return false;
}

// A parameter both bundles hold with different shapes (that no recorded alternative explains),
// or no tensor in common at all (then `comparable` is cleared).
std::optional<Diagnostic> modelMismatch(const Bundle& ref, const Bundle& cand, bool& comparable) {
    std::size_t common = 0;
    for (const auto& [id, shards] : cand.tensors()) {
        const auto* refShards = ref.shards(id);
        if (!refShards) {
            continue;
        }
        ++common;
        const auto& refShape = refShards->front().placement.globalShape;
        const auto& candShape = shards.front().placement.globalShape;
        if (id.kind == TensorKind::Parameter && refShape != candShape &&
            !alternativeOfShape(shards, refShape)) {
            return makeError("different-model", "tensor " + id.path(),
                             "the reference's parameter has shape " + shapeToString(refShape) +
                                 ", the candidate's " + shapeToString(candShape) +
                                 ": the reference is of another model");
        }
    }
    if (common == 0 && !ref.tensors().empty() && !cand.tensors().empty()) {
        comparable = false;
        return makeError("different-model", cand.dir().string(),
                         "the reference and the candidate have no tensor in common: the "
                         "reference is of another model (or another run's iterations)");
    }
    return std::nullopt;
}

std::string describeStart(const std::optional<RunStart>& s) {
    if (!s) {
        return "fresh weights";
    }
    return "checkpoint " + s->checkpoint + " (step " + std::to_string(s->step) + ", metadata " +
           s->metadataSha256.substr(0, 12) + ")";
}

// Both runs must start from the same state, or a divergence says nothing about the
// candidate's layout. The same checkpoint is the same DCP metadata digest and step (the paths
// may differ: a checkpoint copied to another host is the same one).
std::optional<Diagnostic> startMismatch(const Bundle& ref, const Bundle& cand) {
    const auto& a = ref.manifest().start;
    const auto& b = cand.manifest().start;
    if (!a && !b) {
        return std::nullopt;
    }
    if (a && b && a->kind == b->kind && a->step == b->step &&
        a->metadataSha256 == b->metadataSha256) {
        return std::nullopt;
    }
    return makeWarning("start-differs", cand.dir().string(),
                       "the reference started from " + describeStart(a) + ", the candidate from " +
                           describeStart(b) +
                           ": the runs did not start from the same state, so divergences may "
                           "come from the start, not the candidate's layout");
}

} // namespace

PairCheck checkBundlePair(const Bundle& reference, const Bundle& candidate) {
    PairCheck check;
    auto& out = check.problems;
    const auto& refRole = reference.manifest().role;
    const auto& candRole = candidate.manifest().role;
    std::error_code ec;
    if (std::filesystem::equivalent(reference.dir(), candidate.dir(), ec)) {
        out.push_back(makeError("same-bundle", candidate.dir().string(),
                                "the same bundle is given as both reference and candidate"));
        check.comparable = false;
        return check;
    }
    if (refRole == "candidate" && candRole == "reference") {
        out.push_back(makeError("swapped-roles", reference.dir().string(),
                                "the bundles are given in the wrong order: this is the "
                                "candidate and " +
                                    candidate.dir().string() +
                                    " the reference; give the reference first"));
        check.comparable = false;
    } else if (refRole == "candidate") {
        out.push_back(makeError("role-mismatch", reference.dir().string(),
                                "is a candidate bundle (its manifest says role 'candidate'), "
                                "not a reference: compare against a reference capture"));
        check.comparable = false;
    }
    if (sameContent(reference, candidate)) {
        out.push_back(makeError("same-bundle", candidate.dir().string(),
                                "holds the same rank files (sizes and CRC-32) as " +
                                    reference.dir().string() + ": the same bundle given twice"));
        check.comparable = false;
        return check;
    }
    if (auto mismatch = modelMismatch(reference, candidate, check.comparable)) {
        out.push_back(std::move(*mismatch));
    }
    if (auto differs = startMismatch(reference, candidate)) {
        out.push_back(std::move(*differs));
    }
    return check;
}

} // namespace ttrace
