#pragma once
// The manifest's optional "gradient_clipping" section (docs/bundle-format.md). It only refines
// the verdicts of clipped steps, so a malformed one is never fatal: one warning
// ("manifest-gradient-clipping") and the diff goes on without it.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/gradient_clipping.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ttrace {

// Empty when the section is absent (older bundles, runs that do not clip) or malformed.
std::vector<ClipStep> readClippingSection(const nlohmann::json& root, const std::string& where,
                                          Diagnostics& out);

} // namespace ttrace
