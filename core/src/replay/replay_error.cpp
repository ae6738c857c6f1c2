#include "ttrace/replay/replay_error.h"

#include <array>
#include <utility>

namespace ttrace::replay {
namespace {

constexpr NameTable kNames{ErrorCode::UnknownAgentError,
                           std::array<std::pair<ErrorCode, std::string_view>, 20>{{
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
                           }}};

} // namespace

std::string_view errorCodeName(ErrorCode code) {
    return kNames.name(code);
}

ErrorCode agentErrorCode(std::string_view wireCode) {
    // Only the agent's codes (docs/protocol.md); client-side names are never accepted from it.
    for (const auto& [c, name] : kNames.entries()) {
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

namespace {

constexpr DiagnosticCode codeOf(ErrorCode code) {
    switch (code) {
    case ErrorCode::Timeout: return DiagnosticCode::AgentTimeout;
    case ErrorCode::Unreachable: return DiagnosticCode::AgentUnreachable;
    case ErrorCode::Cancelled: return DiagnosticCode::Cancelled;
    case ErrorCode::Closed: return DiagnosticCode::ClientClosed;
    case ErrorCode::BadReply: return DiagnosticCode::BadReply;
    case ErrorCode::ReplyTooLarge: return DiagnosticCode::ReplyTooLarge;
    case ErrorCode::TokenFile: return DiagnosticCode::TokenFile;
    case ErrorCode::BadEndpoint: return DiagnosticCode::BadEndpoint;
    case ErrorCode::Busy: return DiagnosticCode::AgentBusy;
    case ErrorCode::Malformed: return DiagnosticCode::AgentMalformed;
    case ErrorCode::TooLarge: return DiagnosticCode::AgentTooLarge;
    case ErrorCode::Version: return DiagnosticCode::AgentVersion;
    case ErrorCode::Unauthenticated: return DiagnosticCode::AgentUnauthenticated;
    case ErrorCode::UnknownOp: return DiagnosticCode::AgentUnknownOp;
    case ErrorCode::UnknownModule: return DiagnosticCode::AgentUnknownModule;
    case ErrorCode::NoReferenceTensor: return DiagnosticCode::AgentNoReferenceTensor;
    case ErrorCode::NotReplayable: return DiagnosticCode::AgentNotReplayable;
    case ErrorCode::LayoutTooSmall: return DiagnosticCode::AgentLayoutTooSmall;
    case ErrorCode::ReplayFailed: return DiagnosticCode::AgentReplayFailed;
    case ErrorCode::UnknownAgentError: return DiagnosticCode::AgentError;
    }
    return DiagnosticCode::AgentError;
}

// A failure's finding is named as the failure is (docs/protocol.md, docs/localize-json.md).
constexpr bool findingsNamedAsErrors() {
    for (const auto& [code, name] : kNames.entries()) {
        if (diagnosticCodeName(codeOf(code)) != name) {
            return false;
        }
    }
    return true;
}
static_assert(findingsNamedAsErrors());

} // namespace

DiagnosticCode diagnosticCodeFor(ErrorCode code) {
    return codeOf(code);
}

std::string Error::toString() const {
    return std::string(errorCodeName(code)) + ": " + message;
}

} // namespace ttrace::replay
