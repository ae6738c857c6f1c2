#include "ttrace/ui/models/localize_job.h"

#include "ttrace/bundle.h"
#include "ttrace/replay/agent_judge.h"
#include "ttrace/replay/localize_walk.h"

#include <algorithm>

namespace ttrace::ui {

using namespace ttrace::replay;

int expectedReplays(const LocalizeRequest& request) {
    if (!request.suspects.empty()) {
        return static_cast<int>(request.suspects.size());
    }
    if (!request.diff) {
        return 0;
    }
    const auto start = replayStart(*request.diff);
    if (!start) {
        return 0;
    }
    if (start->phase == LocalizePhase::Reduction || start->phase == LocalizePhase::Step) {
        return 1; // one step replay over every parameter
    }
    return static_cast<int>(suspectsAt(*request.diff, *start).size());
}

LocalizeResult runLocalize(AgentClient& client, const AgentInfo& agent,
                           const LocalizeRequest& request, const CancelToken& cancel,
                           const LocalizeCallbacks& callbacks) {
    LocalizeResult result;
    auto reference = openBundle(request.referenceBundle);
    if (!reference.ok()) {
        result.problems = reference.diagnostics;
        result.problems.push_back(makeError(DiagnosticCode::BadReference, request.referenceBundle,
                                            "the reference bundle cannot be opened for judging"));
        return result;
    }
    AgentJudgeOptions options;
    options.tolerance = request.tolerance;
    options.cancel = cancel;
    options.progress = callbacks.waiting;
    const AgentJudge agentJudge(client, agent, *reference.bundle, options);
    const JudgeFn judge = [&](const Suspect& s) {
        if (callbacks.replaying) {
            callbacks.replaying(s);
        }
        return agentJudge(s);
    };
    WalkCallbacks walk;
    walk.onVerdict = callbacks.verdict;
    walk.cancelled = [cancel] { return cancel.cancelled(); };
    if (!request.suspects.empty()) {
        // With the diff: a reduction suspect is judged as the walk judges the reduction.
        result = judgeNamed(request.suspects, judge, walk, request.diff.get());
    } else if (request.diff) {
        result = walkDivergence(*request.diff, judge, walk);
    }
    if (cancel.cancelled()) {
        // The request in flight ends with the client's "cancelled" error: not a problem of
        // the agent, the user asked for it.
        result.cancelled = true;
        std::erase_if(result.problems, [](const Diagnostic& d) {
            return d.code == diagnosticCodeFor(ErrorCode::Cancelled);
        });
    }
    return result;
}

} // namespace ttrace::ui
