#pragma once
// One localize run, as plain data in and out: either the walk from the first divergence in
// time (the core's walkDivergence, as `ttrace localize` runs it) or named suspects judged one
// by one. Runs on the caller's thread (a worker's) and blocks on the agent; callbacks report
// each replay as it starts and each verdict as it is reached.
#include "ttrace/diff_result.h"
#include "ttrace/replay/agent_client.h"
#include "ttrace/replay/localize_result.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ttrace::ui {

struct LocalizeRequest {
    std::shared_ptr<const DiffResult> diff;
    std::string referenceBundle;
    std::vector<replay::Suspect> suspects; // empty: walk from the first divergence in time
    ToleranceSettings tolerance;
};

struct LocalizeCallbacks {
    std::function<void(const replay::Suspect&)> replaying;
    std::function<void(const replay::ModuleVerdict&)> verdict;
    std::function<void(const replay::RequestProgress&)> waiting; // client owner thread
};

// Replays the walk will ask for at most (for a progress bar).
int expectedReplays(const LocalizeRequest& request);

// Never throws; transport failures and a reference bundle that cannot be opened end up in
// LocalizeResult::problems, a cancel in LocalizeResult::cancelled.
replay::LocalizeResult runLocalize(replay::AgentClient& client, const replay::AgentInfo& agent,
                                   const LocalizeRequest& request,
                                   const replay::CancelToken& cancel,
                                   const LocalizeCallbacks& callbacks);

} // namespace ttrace::ui
