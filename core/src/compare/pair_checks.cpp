#include "compare/pair_checks.h"

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
            return makeError(DiagnosticCode::DifferentModel, "tensor " + id.path(),
                             "the reference's parameter has shape " + shapeToString(refShape) +
                                 ", the candidate's " + shapeToString(candShape) +
                                 ": the reference is of another model");
        }
    }
    if (common == 0 && !ref.tensors().empty() && !cand.tensors().empty()) {
        comparable = false;
        return makeError(DiagnosticCode::DifferentModel, cand.dir().string(),
                         "the reference and the candidate have no tensor in common: the "
                         "reference is of another model (or another run's iterations)");
    }
    return std::nullopt;
}

} // namespace

PairCheck checkBundlePair(const Bundle& reference, const Bundle& candidate) {
    PairCheck check;
    auto& out = check.problems;
    const auto& refRole = reference.manifest().role;
    const auto& candRole = candidate.manifest().role;
    std::error_code ec;
    if (std::filesystem::equivalent(reference.dir(), candidate.dir(), ec)) {
        out.push_back(makeError(DiagnosticCode::SameBundle, candidate.dir().string(),
                                "the same bundle is given as both reference and candidate"));
        check.comparable = false;
        return check;
    }
    if (refRole == "candidate" && candRole == "reference") {
        out.push_back(makeError(DiagnosticCode::SwappedRoles, reference.dir().string(),
                                "the bundles are given in the wrong order: this is the "
                                "candidate and " +
                                    candidate.dir().string() +
                                    " the reference; give the reference first"));
        check.comparable = false;
    } else if (refRole == "candidate") {
        out.push_back(makeError(DiagnosticCode::RoleMismatch, reference.dir().string(),
                                "is a candidate bundle (its manifest says role 'candidate'), "
                                "not a reference: compare against a reference capture"));
        check.comparable = false;
    }
    if (sameContent(reference, candidate)) {
        out.push_back(makeError(DiagnosticCode::SameBundle, candidate.dir().string(),
                                "holds the same rank files (sizes and CRC-32) as " +
                                    reference.dir().string() + ": the same bundle given twice"));
        check.comparable = false;
        return check;
    }
    if (auto mismatch = modelMismatch(reference, candidate, check.comparable)) {
        out.push_back(std::move(*mismatch));
    }
    return check;
}

} // namespace ttrace
