#pragma once
// The manifest's optional "start" section (docs/bundle-format.md): the checkpoint a run
// resumed from. It only feeds a pair check, so a malformed one is never fatal: one warning
// ("manifest-start") and the bundle reads as a fresh start.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/manifest.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ttrace {

// Nothing when the section is absent (fresh starts, older bundles) or malformed (then with one
// warning in `out`).
std::optional<RunStart> readStartSection(const nlohmann::json& root, const std::string& where,
                                         Diagnostics& out);

} // namespace ttrace
