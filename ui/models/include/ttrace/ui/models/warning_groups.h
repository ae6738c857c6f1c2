#pragma once
// Problems and warnings of a comparison, grouped by kind (the diagnostic code) and module with
// counts, so a run where 40 tensors have replicas that disagree shows one line per module and
// kind instead of 40 raw lines. Bundle-level diagnostics form groups without a module.
#include "ttrace/compare/diff_result.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ttrace::ui {

struct WarningGroup {
    Severity severity = Severity::Warning;
    DiagnosticCodeValue code = DiagnosticCode::InternalError; // set from the first item
    std::string module;                // empty for findings about a bundle or a file
    std::vector<Diagnostic> items;     // in the order found
    std::optional<std::size_t> tensor; // the first tensor with this finding (to select)
};

// Errors first, then warnings; within a severity by code, then module execution order.
std::vector<WarningGroup> groupWarnings(const DiffResult& diff);
// Groups of loose diagnostics (while loading, before any tensor result exists).
std::vector<WarningGroup> groupWarnings(const Diagnostics& diagnostics);

} // namespace ttrace::ui
