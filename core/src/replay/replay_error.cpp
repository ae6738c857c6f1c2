#include "ttrace/replay/replay_error.h"

#include <array>
#include <utility>

namespace ttrace::replay {
namespace {

constexpr std::array<std::pair<ErrorCode, std::string_view>, 20> kNames{{
    {ErrorCode::Timeout, "timeout"},
    {ErrorCode::Unreachable, "unreachable"},
    {ErrorCode::Cancelled, "cancelled"},
    {ErrorCode::Closed, "closed"},
    {ErrorCode::BadReply, "bad_reply"},
    {ErrorCode::ReplyTooLarge, "reply_too_large"},
    {ErrorCode::TokenFile, "token_file"},
    {ErrorCode::BadEndpoint, "bad_endpoint"},
    {ErrorCode::Busy, "busy"},
    {ErrorCode::Malformed, "malformed"},
    {ErrorCode::TooLarge, "too_large"},
    {ErrorCode::Version, "version"},
    {ErrorCode::Unauthenticated, "unauthenticated"},
    {ErrorCode::UnknownOp, "unknown_op"},
    {ErrorCode::UnknownModule, "unknown_module"},
    {ErrorCode::NoReferenceTensor, "no_reference_tensor"},
    {ErrorCode::NotReplayable, "not_replayable"},
    {ErrorCode::LayoutTooSmall, "layout_too_small"},
    {ErrorCode::ReplayFailed, "replay_failed"},
    {ErrorCode::UnknownAgentError, "agent_error"},
}};

} // namespace

std::string_view errorCodeName(ErrorCode code) {
    for (const auto& [c, name] : kNames) {
        if (c == code) {
            return name;
        }
    }
    return "agent_error";
}

ErrorCode agentErrorCode(std::string_view wireCode) {
    // Only the agent's codes (docs/protocol.md); client-side names are never accepted from it.
    for (const auto& [c, name] : kNames) {
        if (name == wireCode && c >= ErrorCode::Malformed && c <= ErrorCode::ReplayFailed) {
            return c;
        }
    }
    return ErrorCode::UnknownAgentError;
}

Refusal refusalOf(std::string_view wireReason) {
    static constexpr std::array<std::pair<Refusal, std::string_view>, 6> kReasons{{
        {Refusal::Stochastic, "stochastic"},
        {Refusal::RecomputeStochastic, "recompute_stochastic"},
        {Refusal::RecomputeGradients, "recompute_gradients"},
        {Refusal::CallNotRecorded, "call_not_recorded"},
        {Refusal::HandoffUnrecorded, "handoff_unrecorded"},
        {Refusal::PartialIntegerInput, "partial_integer_input"},
    }};
    if (wireReason.empty()) {
        return Refusal::None;
    }
    for (const auto& [r, name] : kReasons) {
        if (name == wireReason) {
            return r;
        }
    }
    return Refusal::Unknown;
}

std::string Error::toString() const {
    return std::string(errorCodeName(code)) + ": " + message;
}

} // namespace ttrace::replay
