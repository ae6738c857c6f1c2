#include "compare/pair_checks.h"

#include <string>
#include <tuple>
#include <vector>

namespace ttrace {
namespace {

// A byte-identical copy: every rank file's size and CRC-32 equal.
bool sameContent(const Manifest& a, const Manifest& b) {
    const auto& ra = a.ranks;
    const auto& rb = b.ranks;
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

// The roles: a candidate given as the reference is refused unless the user chose it, and then
// said to rest on the analytic bound; a pair given in the wrong order is always refused.
void checkRoles(const Manifest& reference, const Manifest& candidate,
                const std::filesystem::path& referenceDir,
                const std::filesystem::path& candidateDir, bool referenceIsCandidate,
                PairCheck& check) {
    auto& out = check.problems;
    if (reference.role != "candidate") {
        return;
    }
    if (candidate.role == "reference") {
        out.push_back(makeError(DiagnosticCode::SwappedRoles, referenceDir.string(),
                                "the bundles are given in the wrong order: this is the "
                                "candidate and " +
                                    candidateDir.string() +
                                    " the reference; give the reference first"));
        check.comparable = false;
    } else if (!referenceIsCandidate) {
        out.push_back(makeError(DiagnosticCode::RoleMismatch, referenceDir.string(),
                                "is a candidate bundle (its manifest says role 'candidate'), "
                                "not a reference: compare against a reference capture, or use "
                                "it as the reference by choice (--reference-is-candidate)"));
        check.comparable = false;
    } else {
        out.push_back(makeWarning(
            DiagnosticCode::ReferenceIsCandidate, referenceDir.string(),
            "a candidate capture serves as the reference (--reference-is-candidate): it has no "
            "perturbed variants, so every verdict rests on the analytic bound, and a bug both "
            "runs share cannot be seen"));
    }
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
    return makeWarning(DiagnosticCode::StartDiffers, cand.dir().string(),
                       "the reference started from " + describeStart(a) + ", the candidate from " +
                           describeStart(b) +
                           ": the runs did not start from the same state, so divergences may "
                           "come from the start, not the candidate's layout");
}

} // namespace

PairCheck checkManifestPair(const Manifest& reference, const Manifest& candidate,
                            const std::filesystem::path& referenceDir,
                            const std::filesystem::path& candidateDir, bool referenceIsCandidate) {
    PairCheck check;
    auto& out = check.problems;
    std::error_code ec;
    if (std::filesystem::equivalent(referenceDir, candidateDir, ec)) {
        out.push_back(makeError(DiagnosticCode::SameBundle, candidateDir.string(),
                                "the same bundle is given as both reference and candidate"));
        check.comparable = false;
        return check;
    }
    checkRoles(reference, candidate, referenceDir, candidateDir, referenceIsCandidate, check);
    if (sameContent(reference, candidate)) {
        out.push_back(makeError(DiagnosticCode::SameBundle, candidateDir.string(),
                                "holds the same rank files (sizes and CRC-32) as " +
                                    referenceDir.string() + ": the same bundle given twice"));
        check.comparable = false;
    }
    return check;
}

PairCheck checkBundlePair(const Bundle& reference, const Bundle& candidate,
                          bool referenceIsCandidate) {
    auto check = checkManifestPair(reference.manifest(), candidate.manifest(), reference.dir(),
                                   candidate.dir(), referenceIsCandidate);
    if (!check.comparable) {
        return check;
    }
    if (auto mismatch = modelMismatch(reference, candidate, check.comparable)) {
        check.problems.push_back(std::move(*mismatch));
    }
    if (auto differs = startMismatch(reference, candidate)) {
        check.problems.push_back(std::move(*differs));
    }
    return check;
}

} // namespace ttrace
