#pragma once
// The production judge of the localize walk: asks the agent to replay a suspect with the
// reference's nominal and perturbed inputs, waits (on the caller's thread: use a worker), and
// judges the returned shards against the reference bundle.
#include "ttrace/io/bundle.h"
#include "ttrace/replay/agent_client.h"
#include "ttrace/replay/localize_walk.h"

#include <string>
#include <vector>

namespace ttrace::replay {

struct AgentJudgeOptions {
    ToleranceSettings tolerance;
    std::vector<std::string> variants; // empty: "nominal" and every perturbed reference variant
    int busyRetries = 10;              // `busy` replies retried once a second this many times
    CancelToken cancel;
    ProgressCallback progress; // while a replay runs (owner thread)
};

class AgentJudge {
public:
    AgentJudge(AgentClient& client, const AgentInfo& agent, const Bundle& reference,
               AgentJudgeOptions options);

    // Throws ReplayAbort when the agent cannot be asked (timeouts, a vanished agent, bad
    // replies); an agent that cannot replay this module gives a NotReplayable verdict.
    ModuleVerdict operator()(const Suspect& suspect) const;

    [[nodiscard]] static ReplayRequest requestFor(const Suspect& suspect,
                                                  const std::vector<std::string>& variants);
    // Introduced when any tensor diverges, else NotReplayable when some could not be compared,
    // else Inherited.
    [[nodiscard]] static Verdict verdictOf(const ReplayJudgement& judgement, std::string& reason);

private:
    Result<ReplayReply> ask(const ReplayRequest& request) const;

    AgentClient& client_;
    const AgentInfo& agent_;
    const Bundle& reference_;
    AgentJudgeOptions options_;
};

} // namespace ttrace::replay
