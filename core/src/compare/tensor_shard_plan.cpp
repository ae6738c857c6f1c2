#include "ttrace/compare/tensor_shard_plan.h"

#include "ttrace/compare/tolerance.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace ttrace {
namespace {

std::int64_t shardBytes(const Bundle& bundle, const TensorId& id) {
    std::int64_t total = 0;
    if (const auto* shards = bundle.shards(id)) {
        for (const auto& s : *shards) {
            total += s.bytes();
        }
    }
    return total;
}

// Tensors that must stay in one process, with their bytes.
struct Group {
    std::vector<std::size_t> indices;
    std::int64_t bytes = 0;
};

// The training state a tensor inherits from or leaves to the next iteration shares a group
// with every other tensor of that state; any other tensor is a group of its own.
std::vector<Group> affinityGroups(const Bundle& reference, const Bundle& candidate,
                                  const std::vector<TensorId>& ids) {
    std::vector<Group> groups;
    std::map<std::tuple<std::string, TensorKind, std::string>, std::size_t> byState;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::size_t g = groups.size();
        if (const auto state = carriedStateKind(ids[i].kind)) {
            const auto [it, inserted] =
                byState.try_emplace({ids[i].module, *state, ids[i].index}, groups.size());
            g = it->second;
        }
        if (g == groups.size()) {
            groups.emplace_back();
        }
        groups[g].indices.push_back(i);
        groups[g].bytes += comparisonBytes(reference, candidate, ids[i]);
    }
    return groups;
}

} // namespace

std::int64_t comparisonBytes(const Bundle& reference, const Bundle& candidate, const TensorId& id) {
    std::int64_t total = shardBytes(reference, id) + shardBytes(candidate, id);
    for (const auto& v : reference.manifest().variants) {
        if (v != id.variant) {
            total += shardBytes(reference, id.withVariant(v));
        }
    }
    return total;
}

std::vector<TensorShare> planTensorShares(const Bundle& reference, const Bundle& candidate,
                                          const std::vector<TensorId>& ids, int parts) {
    std::vector<TensorShare> shares(static_cast<std::size_t>(std::max(parts, 1)));
    auto groups = affinityGroups(reference, candidate, ids);
    // Largest first onto the least loaded share (ties to the lower share, then the earlier
    // group): within 4/3 of the best split, and the same on every process.
    std::stable_sort(groups.begin(), groups.end(),
                     [](const Group& a, const Group& b) { return a.bytes > b.bytes; });
    for (const auto& g : groups) {
        auto least = std::min_element(
            shares.begin(), shares.end(), [](const TensorShare& a, const TensorShare& b) {
                return a.bytes < b.bytes ||
                       (a.bytes == b.bytes && a.indices.size() < b.indices.size());
            });
        least->indices.insert(least->indices.end(), g.indices.begin(), g.indices.end());
        least->bytes += g.bytes;
    }
    for (auto& s : shares) {
        std::sort(s.indices.begin(), s.indices.end());
    }
    return shares;
}

} // namespace ttrace
