#pragma once
// The layer tree's rows for a result opened from a report: with no manifests at hand, the
// result's own module table (the reference manifest's modules in execution order, plus any
// module only the tensors name) gives the names, types, order and depths the tree needs.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/manifest.h"

#include <vector>

namespace ttrace::ui {

[[nodiscard]] std::vector<ModuleInfo> modulesOfReport(const DiffResult& result);

} // namespace ttrace::ui
