#pragma once
// Per-tensor results of one process's share of a diff, as bytes to send to the process that
// finishes the analysis. An explicit, versioned encoding (CBOR of the report JSON's tensor
// objects, docs/diff-json.md), never the structs' memory: processes may run different builds,
// and a mismatch must be an error, not a misread.
#include "ttrace/compare/diff_result.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

inline constexpr int kTensorWireVersion = 1;

// What one process sends: its tensors, or why it could not compare them.
struct ShareResult {
    int rank = 0;
    std::vector<std::size_t> indices; // into the diff's ids
    std::vector<TensorResult> tensors;
    bool cancelled = false;
    std::string error; // non-empty: the process failed (names the file or tensor it could not read)
    // What the share cost, for the progress and the throughput figures.
    std::int64_t bytes = 0; // shard bytes it read
    double seconds = 0.0;   // its comparison's wall time
};

[[nodiscard]] std::vector<std::uint8_t> encodeShareResult(const ShareResult& share);
// Nothing (and why, in `error`) for bytes that are not a share of this wire version.
std::optional<ShareResult> decodeShareResult(const std::vector<std::uint8_t>& bytes,
                                             std::string& error);

} // namespace ttrace
