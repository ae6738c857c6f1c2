#pragma once
// What the agent says about itself in the `hello` handshake and in `ping` replies.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ttrace::replay {

struct AgentModule {
    std::string name;
    std::string type;
    bool replayable = false;
    std::string why; // empty when replayable, else the reason (e.g. "stochastic: ...")
};

// Which capture a bundle holds, as the agent reports the bundles it serves.
struct BundleIdentity {
    std::string captureId; // empty: a bundle captured before capture ids, or an older agent
    std::string created;   // the manifest's creation time
};

// The parallel layout of a job: its world size and sizes per dimension ("tp", "dp", ...).
struct JobLayout {
    int worldSize = 0;
    std::map<std::string, int> parallel;
};

struct AgentInfo {
    std::string agent; // e.g. "ttrace 0.1.0"
    int protocol = 0;
    int worldSize = 0;
    std::map<std::string, int> parallel;
    std::string role;
    std::string precision;
    std::string bundle;    // the candidate bundle's path on the agent's host
    std::string reference; // the reference bundle's path there
    std::vector<std::int64_t> iterations;
    int microBatches = 0;
    std::vector<AgentModule> modules;
    // An agent relaunched from the bundles (`ttrace serve`) says so, with what differs
    // between the code it runs and the code the bundle was captured with (empty: the same).
    bool relaunched = false;
    std::vector<std::string> codeChanges;
    // A relaunch's own layout next to the captured one (worldSize 0 when the agent does not
    // say: a live job, or an older agent). Smaller than the captured one when the relaunch
    // dropped data parallelism: each of its ranks then replays `ranksPerRank` captured ranks.
    JobLayout capturedLayout;
    JobLayout relaunchedLayout;
    int ranksPerRank = 1;
    // The captures the agent serves; absent (empty) from agents older than capture ids.
    BundleIdentity candidateIdentity;
    BundleIdentity referenceIdentity;

    [[nodiscard]] const AgentModule* findModule(const std::string& name) const;
};

struct PingReply {
    bool busy = false;
    double uptimeSeconds = 0.0;
};

} // namespace ttrace::replay
