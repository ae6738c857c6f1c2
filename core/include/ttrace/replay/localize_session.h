#pragma once
// One localize run, for every front end: `ttrace localize` and the explorer's Localize and
// Localize All hand the same request to `localize` and get the same result, with the same
// words for what went wrong (a reference that cannot be opened, bundles with errors, a
// cancel). Either the walk from the diff's first divergence in time, or named suspects judged
// one by one. Runs on the caller's thread and blocks on the agent.
#include "ttrace/compare/diff_result.h"
#include "ttrace/replay/agent_client.h"
#include "ttrace/replay/cancel_token.h"
#include "ttrace/replay/localize_result.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

namespace ttrace::replay {

struct LocalizeRequest {
    // The comparison of the pair: the walk starts at its first divergence; with named
    // suspects it judges a gradient-reduction suspect (did its param grads agree?). A diff
    // with errors is no reliable story: the walk refuses it, named suspects are judged
    // without it.
    std::shared_ptr<const DiffResult> diff;
    std::filesystem::path referenceBundle; // replays are judged against its tensors
    std::vector<Suspect> suspects;         // empty: walk from the first divergence in time
    ToleranceSettings tolerance;
};

struct LocalizeCallbacks {
    std::function<void(const Suspect&)> replaying;       // each replay as it starts
    std::function<void(const ModuleVerdict&)> verdict;   // each verdict as it is reached
    std::function<void(const RequestProgress&)> waiting; // the client's owner thread
};

// Replays the walk will ask for at most (for a progress bar).
int expectedReplays(const LocalizeRequest& request);

// Never throws; transport failures, a reference bundle that cannot be opened and a diff with
// errors end up in LocalizeResult::problems, a cancel in LocalizeResult::cancelled.
LocalizeResult localize(AgentClient& client, const AgentInfo& agent, const LocalizeRequest& request,
                        const CancelToken& cancel = {}, const LocalizeCallbacks& callbacks = {});

} // namespace ttrace::replay
