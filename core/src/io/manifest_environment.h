#pragma once
// The manifest's optional "environment" section (docs/bundle-format.md). It only feeds the
// report and the drift verdict, so a malformed one is never fatal: one warning
// ("manifest-environment") and the bundle reads as one without it.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/run_environment.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ttrace {

std::optional<RunEnvironment> readEnvironmentSection(const nlohmann::json& root,
                                                     const std::string& where, Diagnostics& out);

} // namespace ttrace
