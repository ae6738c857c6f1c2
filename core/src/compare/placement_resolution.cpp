#include "compare/placement_resolution.h"

#include "ttrace/io/bundle_error.h"

#include <algorithm>
#include <cstring>

namespace ttrace {
namespace {

bool hasCode(const Diagnostics& findings, DiagnosticCode code) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Diagnostic& d) { return d.code == code; });
}

bool hasError(const Diagnostics& findings) {
    return std::any_of(findings.begin(), findings.end(),
                       [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

// Hypothesis h on every shard (0: the capture's own placement); nothing when the shards do not
// all carry it (alternatives are written in the same order on every rank).
std::optional<std::vector<ShardRef>> placedAs(const std::vector<ShardRef>& shards, std::size_t h) {
    std::vector<ShardRef> out = shards;
    for (auto& s : out) {
        if (h > 0) {
            if (s.alternatives.size() < h) {
                return std::nullopt;
            }
            s.placement = s.alternatives[h - 1].placement;
        }
    }
    return out;
}

std::string labelOf(const ShardRef& first, std::size_t h) {
    if (h == 0) {
        return first.hypothesis.empty() ? "the capture's placement" : first.hypothesis;
    }
    return first.alternatives[h - 1].label;
}

struct Fit {
    std::size_t hypothesis = 0;
    MergeResult merged;
    std::vector<ShardRef> shards;
};

bool sameValues(const FullTensor& a, const FullTensor& b) {
    return a.values.size() == b.values.size() &&
           std::equal(a.values.begin(), a.values.end(), b.values.begin(),
                      [](double x, double y) { return x == y || (x != x && y != y); });
}

// Every hypothesis that rebuilds the reference's shape and tiles it: those whose copies agree
// (`fits`) and those whose "replicas" differ (`disagreeing`); the others are excluded, with why.
struct Trials {
    std::vector<Fit> fits;
    std::vector<Fit> disagreeing;
};

Trials tryHypotheses(const TensorId& id, const std::vector<ShardRef>& shards,
                     const std::vector<RawShard>& raw, const Shape& referenceShape,
                     PlacementResolution& resolution) {
    Trials out;
    const auto& first = shards.front();
    for (std::size_t h = 0; h <= first.alternatives.size(); ++h) {
        auto placed = placedAs(shards, h);
        if (!placed) {
            continue;
        }
        const auto label = labelOf(first, h);
        const auto& global = placed->front().placement.globalShape;
        if (global != referenceShape) {
            resolution.excluded.push_back(label + ": rebuilds " + shapeToString(global));
            continue;
        }
        auto pieces = raw;
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            pieces[i].placement = (*placed)[i].placement;
        }
        auto merged = mergeShards(id, std::move(pieces));
        if (!merged.tensor || hasError(merged.findings)) {
            resolution.excluded.push_back(label + ": its pieces do not tile the tensor");
            continue;
        }
        auto& into =
            hasCode(merged.findings, DiagnosticCode::ReplicaDisagree) ? out.disagreeing : out.fits;
        into.push_back({h, std::move(merged), std::move(*placed)});
    }
    return out;
}

// Hypotheses that rebuild the same tensor are one answer: the first (the capture's own when
// it is among them) stands for all.
std::vector<Fit*> distinctFits(std::vector<Fit>& fits) {
    std::vector<Fit*> distinct;
    for (auto& f : fits) {
        const bool seen = std::any_of(distinct.begin(), distinct.end(), [&](const Fit* d) {
            return sameValues(*d->merged.tensor, *f.merged.tensor);
        });
        if (!seen) {
            distinct.push_back(&f);
        }
    }
    return distinct;
}

ResolvedPlacement chosen(ResolvedPlacement out, const ShardRef& first, Fit& fit) {
    out.outcome = ResolutionOutcome::Chosen;
    out.resolution.chosen = labelOf(first, fit.hypothesis);
    out.merged = std::move(fit.merged);
    out.shards = std::move(fit.shards);
    return out;
}

} // namespace

bool hasAlternatives(const std::vector<ShardRef>& shards) {
    return std::any_of(shards.begin(), shards.end(),
                       [](const ShardRef& s) { return !s.alternatives.empty(); });
}

ResolvedPlacement resolvePlacement(const Bundle& candidate, const TensorId& id,
                                   const std::vector<ShardRef>& shards,
                                   const Shape& referenceShape) {
    std::vector<RawShard> raw;
    try {
        for (const auto& s : shards) {
            raw.push_back({s.rank, s.dtype, s.localShape, s.placement, candidate.readShard(s)});
        }
    } catch (const BundleError&) {
        return {}; // the comparison reads the shards again and names the failure
    }
    return resolveShards(id, shards, raw, referenceShape);
}

ResolvedPlacement resolveShards(const TensorId& id, const std::vector<ShardRef>& shards,
                                const std::vector<RawShard>& raw, const Shape& referenceShape) {
    ResolvedPlacement out;
    const auto& first = shards.front();
    out.resolution.hypothesis = labelOf(first, 0);
    auto trials = tryHypotheses(id, shards, raw, referenceShape, out.resolution);
    const auto distinct = distinctFits(trials.fits);
    if (distinct.size() == 1) {
        return chosen(std::move(out), first, *distinct.front());
    }
    if (distinct.empty() && trials.disagreeing.size() == 1) {
        // The reference's shape leaves one layout, and it makes copies: they are known
        // replicas, and copies that differ are the divergence "replicas disagree" (a reduction
        // that did not run), not an open question.
        return chosen(std::move(out), first, trials.disagreeing.front());
    }
    for (const auto& d : trials.disagreeing) {
        out.resolution.excluded.push_back(labelOf(first, d.hypothesis) +
                                          ": the copies it takes for replicas differ");
    }
    if (distinct.empty() && trials.disagreeing.empty()) {
        out.outcome = ResolutionOutcome::NoneFits;
        return out;
    }
    out.outcome = ResolutionOutcome::Unresolved;
    for (const auto* f : distinct) {
        out.resolution.alternatives.push_back(labelOf(first, f->hypothesis));
    }
    return out;
}

} // namespace ttrace
