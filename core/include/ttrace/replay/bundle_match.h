#pragma once
// Whether an agent serves the bundles a front end shows. Bundles move between hosts, so paths
// say nothing: each bundle is identified by its capture's id (the manifest's `capture_id`), or,
// for bundles captured before ids, by the manifest's creation time. A replay by an agent that
// serves another capture would judge modules with another run's code and inputs.
#include "ttrace/io/manifest.h"
#include "ttrace/replay/agent_info.h"

#include <optional>
#include <string>

namespace ttrace::replay {

enum class BundleMatch {
    OtherCapture, // the agent serves another capture than the one shown
    Unknown,      // one side cannot say which capture it holds
};

struct BundleMismatch {
    BundleMatch code = BundleMatch::OtherCapture;
    std::string message; // names the role, both captures and the agent's path
};

// Nothing when the agent serves the shown reference and candidate, else why not.
std::optional<BundleMismatch> agentBundleMismatch(const AgentInfo& agent, const Manifest& reference,
                                                  const Manifest& candidate);

} // namespace ttrace::replay
