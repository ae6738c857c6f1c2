#include "ttrace/replay/bundle_match.h"

namespace ttrace::replay {
namespace {

// "capture 9f0c1a2b" or "the capture created 2026-11-26T10:00:00Z".
std::string describe(const std::string& captureId, const std::string& created) {
    if (!captureId.empty()) {
        return "capture " + captureId.substr(0, 8);
    }
    return created.empty() ? std::string("an unidentified capture")
                           : "the capture created " + created;
}

std::optional<BundleMismatch> compare(const char* role, const BundleIdentity& served,
                                      const std::string& servedPath, const Manifest& shown) {
    // The shown bundle decides what is compared: its id, else (older bundles) its time.
    const bool byId = !shown.captureId.empty();
    const std::string& want = byId ? shown.captureId : shown.created;
    const std::string& have = byId ? served.captureId : served.created;
    if (want.empty()) {
        return BundleMismatch{BundleMatch::Unknown,
                              std::string("the ") + role +
                                  " shown records neither a capture id nor a creation time: "
                                  "cannot tell whether the agent serves it"};
    }
    if (have.empty()) {
        return BundleMismatch{BundleMatch::Unknown,
                              std::string("the agent does not say which ") + role +
                                  " capture it serves (an agent older than capture ids): "
                                  "restart it with this version of ttrace"};
    }
    if (have == want) {
        return std::nullopt;
    }
    return BundleMismatch{
        BundleMatch::OtherCapture,
        std::string("the agent serves another ") + role + " (" +
            describe(served.captureId, served.created) + ", " + servedPath +
            " on its host) than the one shown (" + describe(shown.captureId, shown.created) +
            "): connect to an agent serving this " + role + ", or open the bundles it serves"};
}

} // namespace

std::optional<BundleMismatch> agentBundleMismatch(const AgentInfo& agent, const Manifest& reference,
                                                  const Manifest& candidate) {
    if (auto m = compare("candidate", agent.candidateIdentity, agent.bundle, candidate)) {
        return m;
    }
    return compare("reference", agent.referenceIdentity, agent.reference, reference);
}

} // namespace ttrace::replay
