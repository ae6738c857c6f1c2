#include "ttrace/compare/shape_diagnosis.h"

#include "compare/error_slices.h"
#include "compare/row_signatures.h"
#include "compare/signature_text.h"
#include "ttrace/io/name_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace ttrace {
namespace {

// The names of a diagnosis' `kind` in the diff JSON (docs/diff-json.md).
constexpr NameTable kSignatureKindNames{SignatureKind::Transpose,
                                        std::array<std::pair<SignatureKind, std::string_view>, 9>{{
                                            {SignatureKind::ConstantFactor, "constant_factor"},
                                            {SignatureKind::SliceFactors, "slice_factors"},
                                            {SignatureKind::SliceLocal, "slice_local"},
                                            {SignatureKind::SlicePermutation, "slice_permutation"},
                                            {SignatureKind::RowPermutation, "row_permutation"},
                                            {SignatureKind::ZeroedRows, "zeroed_rows"},
                                            {SignatureKind::ReplicasDisagree, "replicas_disagree"},
                                            {SignatureKind::SignFlip, "sign_flip"},
                                            {SignatureKind::Transpose, "transpose"},
                                        }}};

// What "explains the error" means: after undoing the signature, what is left is within the
// tolerance, or at most 5% of the error we started from (BF16 round-off on top of a clean
// factor must not hide the factor).
struct Bound {
    double tolerance;
    double error;
    [[nodiscard]] bool explains(double residual) const {
        return residual <= std::max(tolerance, 0.05 * error);
    }
};

// Least-squares factor c minimizing ||cand - c ref|| and the relative residual.
std::pair<double, double> bestFactor(const std::vector<double>& ref,
                                     const std::vector<double>& cand) {
    double rc = 0.0;
    double rr = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        rc += ref[i] * cand[i];
        rr += ref[i] * ref[i];
    }
    if (!(rr > 0.0)) {
        return {0.0, std::numeric_limits<double>::infinity()};
    }
    const double c = rc / rr;
    double res = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        res += (cand[i] - c * ref[i]) * (cand[i] - c * ref[i]);
    }
    return {c, std::sqrt(res / rr) / std::max(std::abs(c), 1e-300)};
}

std::optional<ShapeSignature> constantFactor(const DiagnosisInput& in, const Bound& bound) {
    const auto [c, residual] = bestFactor(in.reference.values, in.candidate.values);
    if (!bound.explains(residual) || std::abs(c - 1.0) <= bound.tolerance) {
        return std::nullopt;
    }
    ShapeSignature s;
    s.factor = c;
    s.residual = residual;
    const bool flip = std::abs(c + 1.0) < 0.01;
    s.kind = flip ? SignatureKind::SignFlip : SignatureKind::ConstantFactor;
    s.summary = flip ? std::string("sign flipped (x-1)")
                     : "x" + formatFactor(c) + nameFactor(c, in.parallel);
    s.evidence = "candidate = " + formatFactor(c) + " * reference, relative residual " +
                 formatFactor(residual);
    return s;
}

// Each slice scaled by its own clean factor (a norm taken over one rank's slice only).
std::optional<ShapeSignature> sliceFactors(const std::vector<ErrorSlice>& slices,
                                           const DiagnosisInput& in, const Bound& bound) {
    std::vector<std::pair<int, double>> factors;
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (const auto& s : slices) {
        if (s.partial) {
            return std::nullopt;
        }
        const auto [c, residual] = bestFactor(gather(in.reference.values, s.global), s.own);
        if (!bound.explains(residual)) {
            return std::nullopt;
        }
        factors.emplace_back(s.rank, c);
        lo = std::min(lo, c);
        hi = std::max(hi, c);
    }
    if (factors.size() < 2 || !(hi - lo > 0.01 * std::abs(hi))) {
        return std::nullopt;
    }
    ShapeSignature sig;
    sig.kind = SignatureKind::SliceFactors;
    sig.summary = "each slice scaled by its own factor (" + formatFactor(lo) + " to " +
                  formatFactor(hi) + ")";
    for (const auto& [rank, c] : factors) {
        sig.evidence += (sig.evidence.empty() ? "" : ", ") + std::string("rank ") +
                        std::to_string(rank) + ": x" + formatFactor(c);
        sig.ranks.push_back(rank);
    }
    return sig;
}

std::optional<ShapeSignature> sliceLocal(const std::vector<ErrorSlice>& slices,
                                         const DiagnosisInput& in, const Bound& bound) {
    std::set<int> bad;
    std::set<int> good;
    double worstGood = 0.0;
    double worstBad = 0.0;
    std::set<std::int64_t> regions;
    for (const auto& s : slices) {
        regions.insert(s.firstGlobal);
        const double e = relDiff(s.own, gather(in.reference.values, s.global));
        if (e > bound.tolerance) {
            bad.insert(s.rank);
            worstBad = std::max(worstBad, e);
        } else {
            good.insert(s.rank);
            worstGood = std::max(worstGood, e);
        }
    }
    // Every slice covering the same elements (sum partials, replicas) says nothing local.
    if (bad.empty() || good.empty() || regions.size() < 2) {
        return std::nullopt;
    }
    ShapeSignature sig;
    sig.kind = SignatureKind::SliceLocal;
    sig.ranks.assign(bad.begin(), bad.end());
    sig.summary = "error only in the slices of " + rankList(sig.ranks);
    sig.evidence = "worst slice error there " + formatFactor(worstBad) +
                   "; every other slice within tolerance (worst " + formatFactor(worstGood) + ")";
    return sig;
}

// Distinct regions of equal size along the sharded dimension, in global order.
std::vector<const ErrorSlice*> distinctRegions(const std::vector<ErrorSlice>& slices) {
    std::map<std::int64_t, const ErrorSlice*> byStart;
    for (const auto& s : slices) {
        byStart.emplace(s.firstGlobal, &s);
    }
    std::vector<const ErrorSlice*> out;
    for (const auto& [start, s] : byStart) {
        if (!out.empty() && s->global.size() != out.front()->global.size()) {
            return {};
        }
        out.push_back(s);
    }
    return out.size() >= 2 && out.size() <= 64 ? out : std::vector<const ErrorSlice*>{};
}

std::optional<ShapeSignature> slicePermutation(const std::vector<ErrorSlice>& slices,
                                               const DiagnosisInput& in, const Bound& bound) {
    const auto regions = distinctRegions(slices);
    std::vector<std::int64_t> match;
    std::set<std::int64_t> used;
    for (const auto* holder : regions) {
        const auto cand = gather(in.candidate.values, holder->global);
        std::int64_t best = -1;
        double bestErr = std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < regions.size(); ++j) {
            const double e = relDiff(cand, gather(in.reference.values, regions[j]->global));
            if (e < bestErr) {
                bestErr = e;
                best = static_cast<std::int64_t>(j);
            }
        }
        if (!bound.explains(bestErr) || !used.insert(best).second) {
            return std::nullopt;
        }
        match.push_back(best);
    }
    if (match.empty() || std::is_sorted(match.begin(), match.end())) {
        return std::nullopt;
    }
    ShapeSignature sig;
    sig.kind = SignatureKind::SlicePermutation;
    sig.indices = match;
    sig.summary = "slices permuted along the sharded dimension: order " + indexList(match);
    sig.evidence = "slice i of the candidate matches slice order[i] of the reference within "
                   "tolerance (" +
                   std::to_string(match.size()) + " slices)";
    return sig;
}

// Replicas of one region grouped by value: each joins the first group whose first member it
// agrees with (within the tolerance), so every replica is compared with the others, not only
// with the lowest rank.
struct ReplicaGroups {
    std::vector<std::vector<const ErrorSlice*>> groups;
    double apart = 0.0; // the largest relative difference between two groups' first members
};

ReplicaGroups groupReplicas(const std::vector<const ErrorSlice*>& members, const Bound& bound) {
    ReplicaGroups out;
    for (const auto* m : members) {
        auto it = std::find_if(out.groups.begin(), out.groups.end(), [&](const auto& g) {
            return relDiff(m->own, g.front()->own) <= bound.tolerance;
        });
        if (it == out.groups.end()) {
            for (const auto& g : out.groups) {
                out.apart = std::max(out.apart, relDiff(m->own, g.front()->own));
            }
            out.groups.push_back({m});
        } else {
            it->push_back(m);
        }
    }
    return out;
}

std::string groupText(const std::vector<const ErrorSlice*>& group) {
    std::vector<int> ranks;
    for (const auto* m : group) {
        ranks.push_back(m->rank);
    }
    return rankList(ranks);
}

// Copies of the same elements that differ between ranks. The ranks named are those whose own
// copy is wrong against the reference (what the per-rank plot shows beyond its tolerance line),
// each with its relative difference; the evidence says how the copies group and how far apart
// the groups are, as a relative difference (never a bare "differ by 1").
std::optional<ShapeSignature> replicasDisagree(const std::vector<ErrorSlice>& slices,
                                               const DiagnosisInput& in, const Bound& bound) {
    std::map<std::pair<std::int64_t, std::size_t>, std::vector<const ErrorSlice*>> regions;
    for (const auto& s : slices) {
        if (!s.partial) {
            regions[{s.firstGlobal, s.global.size()}].push_back(&s);
        }
    }
    std::map<int, double> wrong; // rank -> its copy's relative difference to the reference
    std::set<int> apart;
    std::string between;
    for (const auto& [key, members] : regions) {
        const auto grouped = groupReplicas(members, bound);
        if (grouped.groups.size() < 2) {
            continue;
        }
        std::string groups;
        for (const auto& g : grouped.groups) {
            groups += (groups.empty() ? "" : " | ") + groupText(g);
        }
        between += (between.empty() ? "" : "; ") + std::string("copies group as ") + groups +
                   ", groups apart by a relative difference of up to " +
                   formatFactor(grouped.apart);
        for (const auto* m : members) {
            apart.insert(m->rank);
            const double e = relDiff(m->own, gather(in.reference.values, m->global));
            if (e > bound.tolerance) {
                wrong[m->rank] = std::max(wrong[m->rank], e);
            }
        }
    }
    if (apart.empty()) {
        return std::nullopt;
    }
    ShapeSignature sig;
    sig.kind = SignatureKind::ReplicasDisagree;
    std::string perRank;
    for (const auto& [rank, e] : wrong) {
        sig.ranks.push_back(rank);
        perRank += (perRank.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) +
                   " " + formatFactor(e);
    }
    if (sig.ranks.empty()) {
        sig.ranks.assign(apart.begin(), apart.end()); // apart, yet each within the tolerance
        sig.summary = "replicas disagree across " + rankList(sig.ranks);
    } else {
        sig.summary = "replicas disagree; wrong against the reference: " + rankList(sig.ranks);
        between = "relative difference to the reference: " + perRank + "; " + between;
    }
    sig.evidence = between;
    return sig;
}

} // namespace

std::string_view signatureKindName(SignatureKind kind) {
    return kSignatureKindNames.name(kind);
}

std::optional<SignatureKind> parseSignatureKind(std::string_view name) {
    return kSignatureKindNames.parse(name);
}

std::vector<ShapeSignature> diagnoseShape(const DiagnosisInput& in) {
    const auto& ref = in.reference.values;
    const auto& cand = in.candidate.values;
    const double error = relDiff(cand, ref);
    if (ref.size() != cand.size() || ref.empty() || !std::isfinite(error)) {
        return {};
    }
    const Bound bound{in.tolerance, error};
    const auto slices = errorSlices(in.candidate);
    if (error <= in.tolerance) {
        // The merged tensor (the lowest rank's copy) agrees; a divergent tensor then diverges
        // through another rank's replica, which only the replicas' own values can name.
        auto replicas = replicasDisagree(slices, in, bound);
        return replicas ? std::vector<ShapeSignature>{std::move(*replicas)}
                        : std::vector<ShapeSignature>{};
    }
    std::vector<ShapeSignature> out;
    auto add = [&out](std::optional<ShapeSignature> s) {
        if (s) {
            out.push_back(std::move(*s));
        }
    };
    add(replicasDisagree(slices, in, bound));
    add(constantFactor(in, bound));
    if (out.empty() || out.front().kind == SignatureKind::ReplicasDisagree) {
        add(sliceFactors(slices, in, bound));
        add(slicePermutation(slices, in, bound));
        add(sliceLocal(slices, in, bound));
    }
    // Row signatures are more specific than "some slices wrong" (zeroed rows of one rank's
    // vocabulary range are both), so they are tried then too, and listed first.
    const bool onlyLocal = out.size() == 1 && out.front().kind == SignatureKind::SliceLocal;
    if (out.empty() || onlyLocal) {
        std::vector<ShapeSignature> rows;
        auto addRow = [&rows](std::optional<ShapeSignature> sig) {
            if (sig) {
                rows.push_back(std::move(*sig));
            }
        };
        addRow(zeroedRows(in.reference, in.candidate, bound.tolerance, error));
        addRow(transposed(in.reference, in.candidate, bound.tolerance, error));
        if (rows.empty()) {
            addRow(rowPermutation(in.reference, in.candidate, bound.tolerance, error));
        }
        out.insert(out.begin(), rows.begin(), rows.end());
    }
    return out;
}

} // namespace ttrace
