#include "ttrace/replay/localize_session.h"

#include "ttrace/io/bundle.h"
#include "ttrace/replay/agent_judge.h"
#include "ttrace/replay/localize_walk.h"

#include <algorithm>

namespace ttrace::replay {
namespace {

// Why the request cannot be localized before any replay, in the words every front end shows.
std::optional<LocalizeResult> refusedRequest(const LocalizeRequest& request,
                                             const BundleOpenResult& reference) {
    LocalizeResult refused;
    if (!reference.ok()) {
        for (auto d : reference.diagnostics) {
            d.location = "reference " + d.location;
            refused.problems.push_back(std::move(d));
        }
        refused.problems.push_back(makeError(DiagnosticCode::BadReference,
                                             request.referenceBundle.string(),
                                             "the reference bundle cannot be opened for judging"));
        return refused;
    }
    if (request.suspects.empty() && request.diff && hasErrors(request.diff->diagnostics)) {
        refused.problems.push_back(makeError(
            DiagnosticCode::BadBundles, request.diff->summary.candidateDir,
            "the bundles have errors (the comparison's diagnostics): no reliable divergence "
            "to localize"));
        return refused;
    }
    return std::nullopt;
}

} // namespace

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

LocalizeResult localize(AgentClient& client, const AgentInfo& agent, const LocalizeRequest& request,
                        const CancelToken& cancel, const LocalizeCallbacks& callbacks) {
    const auto reference = openBundle(request.referenceBundle);
    if (auto refused = refusedRequest(request, reference)) {
        return std::move(*refused);
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
    LocalizeResult result;
    // A diff with errors tells nothing reliable about a reduction suspect either.
    const DiffResult* diff =
        request.diff && !hasErrors(request.diff->diagnostics) ? request.diff.get() : nullptr;
    if (!request.suspects.empty()) {
        result = judgeNamed(request.suspects, judge, walk, diff);
    } else if (diff) {
        result = walkDivergence(*diff, judge, walk);
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

} // namespace ttrace::replay
