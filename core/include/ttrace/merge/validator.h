#pragma once
// `ttrace validate`: structural and coverage checks of a whole bundle with a summary.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/progress.h"
#include "ttrace/io/tensor_id.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace ttrace {

struct ValidationSummary {
    std::string role;
    int worldSize = 0;
    std::size_t modules = 0;
    std::size_t variants = 0;
    std::size_t logicalTensors = 0;
    std::size_t shards = 0;
    std::int64_t bytes = 0;
    std::map<std::string, std::size_t> dtypes; // dtype name -> logical tensors
    std::map<std::string, std::size_t> kinds;  // tensor kind -> logical tensors
};

struct ValidationReport {
    ValidationSummary summary;
    Diagnostics diagnostics;
    bool cancelled = false;
    [[nodiscard]] bool ok() const { return !cancelled && !hasErrors(diagnostics); }
};

struct ValidateOptions {
    bool checkCoverage = true; // merge every tensor: holes, overlaps, replica agreement
};

// Called from worker threads as each tensor's coverage has been checked, with its bytes (the
// shards'), so a front end can show tensors and bytes done.
using CheckedTensorFn = std::function<void(const TensorId& id, std::int64_t bytes)>;

ValidationReport validateBundle(const std::filesystem::path& dir,
                                const ValidateOptions& options = {},
                                const ProgressFn& progress = {},
                                const CheckedTensorFn& onTensor = {});

std::string formatSummary(const std::filesystem::path& dir, const ValidationSummary& summary);

} // namespace ttrace
