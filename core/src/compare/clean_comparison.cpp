#include "compare/clean_comparison.h"

#include "compare/fused_sums.h"
#include "compare/metrics_from_sums.h"
#include "merge/direct_merge.h"

#include "ttrace/compare/verdict.h"
#include "ttrace/io/bundle_error.h"

#include <algorithm>
#include <new>

namespace ttrace {
namespace {

StoredTensor stored(const DirectTensor& t) {
    return {t.dtype, t.raw.span()};
}

// The reference's perturbed variants that were captured, read in place; nothing when one of
// them needs the element-wise path.
std::optional<std::vector<DirectTensor>> readVariants(const ComparisonContext& ctx,
                                                      const TensorId& id, const Shape& shape) {
    std::vector<DirectTensor> variants;
    for (const auto& variant : ctx.perturbedVariants) {
        const TensorId pid = id.withVariant(variant);
        if (!ctx.reference.shards(pid)) {
            continue; // not captured in this variant: the analytic bound stands in
        }
        auto merged = mergeDirect(ctx.reference, pid);
        if (!merged || elementCount(merged->shape) != elementCount(shape)) {
            return std::nullopt;
        }
        variants.push_back(std::move(*merged));
    }
    return variants;
}

std::optional<NoiseFloor> floorOf(const std::vector<MetricSums>& floors) {
    if (floors.empty()) {
        return std::nullopt;
    }
    std::vector<double> errors;
    for (const auto& f : floors) {
        errors.push_back(relFromSums(f));
    }
    return noiseFloor(errors);
}

// Per-shard errors and the histogram: owners are summed, replicas repeat their owner's sums
// (same box, same bytes).
void addShardErrors(const DirectTensor& ref, const DirectTensor& cand, double unit,
                    TensorResult& r) {
    std::vector<ShardBox> owners;
    std::vector<std::size_t> slot(cand.shards.size());
    for (std::size_t i = 0; i < cand.shards.size(); ++i) {
        if (cand.owner[i] == i) {
            slot[i] = owners.size();
            owners.push_back({&cand.shards[i]->placement, &cand.shards[i]->localShape});
        } else {
            slot[i] = slot[cand.owner[i]];
        }
    }
    auto sums = shardSums(stored(ref), stored(cand), owners, unit);
    for (std::size_t i = 0; i < cand.shards.size(); ++i) {
        r.metrics.shards.push_back(shardErrorFromSums(cand.shards[i]->rank, sums.shards[slot[i]]));
    }
    r.histogram = std::move(sums.histogram);
}

bool compareDirect(const ComparisonContext& ctx, const TensorId& id, TensorResult& out) {
    const auto ref = mergeDirect(ctx.reference, id);
    const auto cand = ref ? mergeDirect(ctx.candidate, id) : std::nullopt;
    if (!ref || !cand || ref->shape != cand->shape) {
        return false;
    }
    const auto variants = readVariants(ctx, id, ref->shape);
    if (!variants) {
        return false;
    }
    std::vector<StoredTensor> perturbed;
    for (const auto& v : *variants) {
        perturbed.push_back(stored(v));
    }
    const auto totals = totalSums(stored(*ref), stored(*cand), perturbed);
    TensorResult r = out;
    r.tolerance = toleranceFor(ctx, id, ref->dtype, floorOf(totals.floors));
    r.metrics = metricsFromSums(totals.metrics);
    // As the element-wise path: max with the replicas' own ratio, zero when they agree.
    r.ratio = std::max(toleranceRatio(r.metrics.relError, r.tolerance.value), 0.0);
    r.status = verdictFor(r.ratio);
    if (r.status == Status::Divergent) {
        return false;
    }
    addShardErrors(*ref, *cand, r.tolerance.value * finiteRms(stored(*ref)), r);
    noteUnstableFloor(r);
    out = std::move(r);
    return true;
}

} // namespace

bool compareClean(const ComparisonContext& ctx, const TensorId& id, TensorResult& r) {
    try {
        return compareDirect(ctx, id, r);
    } catch (const BundleError&) {
        return false; // the element-wise path reads again and reports the failure
    } catch (const std::bad_alloc&) {
        return false; // likewise, naming the tensor that does not fit
    }
}

} // namespace ttrace
