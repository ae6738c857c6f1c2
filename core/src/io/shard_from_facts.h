#pragma once
// One rank file dataset's facts -> the ShardRef the index holds, with every check that used to
// run on the open HDF5 dataset: dtype against storage type, identity, stored shape against the
// bytes really in the file, placement.
#include "io/rank_facts.h"
#include "ttrace/io/diagnostic_code.h"
#include "ttrace/io/shard.h"
#include "ttrace/io/tensor_id.h"

#include <optional>
#include <string>

namespace ttrace {

struct IndexedShard {
    TensorId id;
    ShardRef shard;
};

// A diagnostic about one dataset: its code and message (the location is added by the caller).
struct DatasetProblem {
    DiagnosticCodeValue code = DiagnosticCode::InternalError; // set with the message
    std::string message;
};

std::optional<IndexedShard> shardFromFacts(const DatasetFacts& facts, int rank,
                                           std::int64_t fileBytes, DatasetProblem& problem);

} // namespace ttrace
