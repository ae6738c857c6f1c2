#pragma once
// The manifest's optional "gradient_convention" section (docs/bundle-format.md). It only names
// the job's convention in reports, so a malformed one is never fatal: one warning
// ("manifest-gradient-convention") and the diff goes on without it.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/gradient_convention.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ttrace {

// Nothing when the section is absent (bundles of older captures) or malformed (then with one
// warning in `out`).
std::optional<GradientConvention> readConventionSection(const nlohmann::json& root,
                                                        const std::string& where, Diagnostics& out);

} // namespace ttrace
