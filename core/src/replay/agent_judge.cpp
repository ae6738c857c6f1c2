#include "ttrace/replay/agent_judge.h"

#include "ttrace/replay/localize_text.h"

#include <chrono>
#include <thread>

namespace ttrace::replay {
namespace {

bool agentCannotReplay(ErrorCode code) {
    return code == ErrorCode::NotReplayable || code == ErrorCode::LayoutTooSmall ||
           code == ErrorCode::UnknownModule || code == ErrorCode::NoReferenceTensor ||
           code == ErrorCode::ReplayFailed;
}

} // namespace

AgentJudge::AgentJudge(AgentClient& client, const AgentInfo& agent, const Bundle& reference,
                       AgentJudgeOptions options)
    : client_(client)
    , agent_(agent)
    , reference_(reference)
    , options_(std::move(options)) {
    if (options_.variants.empty()) {
        options_.variants.emplace_back("nominal");
        for (const auto& v : reference.manifest().variants) {
            if (v != "nominal") {
                options_.variants.push_back(v);
            }
        }
    }
}

ReplayRequest AgentJudge::requestFor(const Suspect& s, const std::vector<std::string>& variants) {
    ReplayRequest r;
    r.module = s.module;
    r.iteration = s.iteration;
    r.variants = variants;
    switch (s.phase) {
    case LocalizePhase::Forward: r.phase = ReplayPhase::Forward; break;
    case LocalizePhase::Backward: r.phase = ReplayPhase::Backward; break;
    case LocalizePhase::Reduction:
    case LocalizePhase::Step: r.phase = ReplayPhase::Step; break;
    }
    // The step runs once per iteration; the agent ignores micro_batch for it.
    r.microBatch = r.phase == ReplayPhase::Step ? 0 : s.microBatch;
    return r;
}

Verdict AgentJudge::verdictOf(const ReplayJudgement& j, std::string& reason) {
    if (j.divergent) {
        return Verdict::Introduced;
    }
    if (!j.judgeable) {
        reason = j.problems.empty() ? std::string("the replay could not be compared")
                                    : j.problems.front().message;
        return Verdict::NotReplayable;
    }
    return Verdict::Inherited;
}

Result<ReplayReply> AgentJudge::ask(const ReplayRequest& request) const {
    for (int attempt = 0;; ++attempt) {
        auto reply = client_.replay(request, options_.cancel, options_.progress).get();
        if (reply || reply.error().code != ErrorCode::Busy || attempt >= options_.busyRetries) {
            return reply;
        }
        // Another client's replay is running: the agent answers one at a time.
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
}

ModuleVerdict AgentJudge::operator()(const Suspect& suspect) const {
    ModuleVerdict v;
    v.suspect = suspect;
    if (const auto* m = agent_.findModule(suspect.module); m && !m->replayable) {
        v.verdict = Verdict::NotReplayable;
        v.reason = m->why.empty() ? "the agent marks it not replayable" : m->why;
        return v;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto reply = ask(requestFor(suspect, options_.variants));
    if (!reply) {
        const auto& e = reply.error();
        if (!agentCannotReplay(e.code)) {
            throw ReplayAbort{makeError(diagnosticCodeFor(e.code),
                                        "agent " + client_.options().endpoint, e.message)};
        }
        v.verdict = Verdict::NotReplayable;
        v.reason = refusalReason(e);
        v.refusedWith = e.code;
        v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return v;
    }
    v.agentSeconds = reply->seconds;
    v.judgement = judgeReplay(std::move(reply).value(), reference_, options_.tolerance);
    v.ratio = v.judgement.maxRatio;
    v.verdict = verdictOf(v.judgement, v.reason);
    v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return v;
}

} // namespace ttrace::replay
