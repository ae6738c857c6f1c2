#pragma once
// A Markdown diff report to paste into a bug report: verdict, first divergence, the modules
// that introduce a divergence, the worst tensors and how their tolerances were derived.
#include "ttrace/diff_result.h"

#include <cstddef>
#include <string>

namespace ttrace {

struct MarkdownOptions {
    std::size_t worstTensors = 15; // rows of the worst-offenders table
};

[[nodiscard]] std::string diffResultToMarkdown(const DiffResult& result,
                                               const MarkdownOptions& options = {});

// Compact number formatting shared by the text reports: "3.2e-07", "12.4", "inf".
[[nodiscard]] std::string formatNumber(double value);

} // namespace ttrace
