#pragma once
// One rank's piece of one logical tensor, as indexed from a rank file (data not yet read).
#include "ttrace/io/dtype.h"
#include "ttrace/io/placement.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ttrace {

// A placement the capture could not exclude for an inferred layout, with its name
// ("seq (bs)"); the comparison picks among the hypothesis and these (`placement_alternatives`).
struct PlacementAlternative {
    std::string label;
    Placement placement;
};

struct ShardRef {
    int rank = 0;
    std::string datasetPath;
    DType dtype = DType::Float32;
    Shape localShape;
    Placement placement;
    // Optional dataset attributes the capture writes when it inferred the layout: how it did
    // (`layout_note`) and the `ttrace.capture.annotate(...)` line that would state it instead
    // (`annotate_hint`). Empty in older bundles.
    std::string layoutNote;
    std::string annotateHint;
    // An inferred placement's name (`placement_hypothesis`) and the alternatives capture could
    // not exclude, in the same order on every rank. Empty in older bundles and for placements
    // with no alternative.
    std::string hypothesis;
    std::vector<PlacementAlternative> alternatives;
    // Where the data lies in the rank file when it is stored contiguous, unfiltered and in the
    // host's own layout: then it is read with pread, and libhdf5 never parses this file's
    // metadata in the tool's process. Empty for chunked or compressed data.
    std::optional<std::int64_t> fileOffset;

    [[nodiscard]] std::int64_t elements() const { return elementCount(localShape); }
    [[nodiscard]] std::int64_t bytes() const {
        return elements() * static_cast<std::int64_t>(dtypeSize(dtype));
    }
};

} // namespace ttrace
