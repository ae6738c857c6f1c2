#pragma once
// The manifest's "optimizer" section (docs/bundle-format.md). The section only refines
// optimizer-step tolerances, so a malformed one is never fatal: it becomes one warning
// ("manifest-optimizer") and the diff goes on without it.
#include "ttrace/io/diagnostic.h"
#include "ttrace/io/optimizer_config.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ttrace {

// Nothing when the section is absent, names an optimizer ttrace does not re-evaluate, or is
// malformed (then with one warning in `out`).
std::optional<OptimizerConfig> readOptimizerSection(const nlohmann::json& root,
                                                    const std::string& where, Diagnostics& out);

// The manifest's optional "optimizer_sharding" ({"sharded": bool, "source": string}); nothing
// when absent or malformed (then with one warning in `out`).
std::optional<OptimizerSharding> readOptimizerSharding(const nlohmann::json& root,
                                                       const std::string& where, Diagnostics& out);

} // namespace ttrace
