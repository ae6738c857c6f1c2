#pragma once
// A validated `replay` reply: every returned shard with its identity, ready for mergeShards.
#include "ttrace/io/tensor_id.h"
#include "ttrace/merge/merge.h"

#include <vector>

namespace ttrace::replay {

struct ReplayShard {
    TensorId id; // with the variant whose inputs produced it
    RawShard shard;
};

struct ReplayReply {
    double seconds = 0.0; // the replay's wall time on the agent
    std::vector<ReplayShard> shards;
};

} // namespace ttrace::replay
