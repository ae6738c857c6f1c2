#pragma once
// A Markdown diff report to paste into a bug report: verdict, first divergence, the modules
// that introduce a divergence, the worst tensors and how their tolerances were derived.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/number_text.h"

#include <cstddef>
#include <string>

namespace ttrace {

struct MarkdownOptions {
    std::size_t worstTensors = 15; // rows of the worst-offenders table
};

[[nodiscard]] std::string diffResultToMarkdown(const DiffResult& result,
                                               const MarkdownOptions& options = {});

} // namespace ttrace
