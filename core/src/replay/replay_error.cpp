#include "ttrace/replay/replay_error.h"

#include <array>
#include <utility>

namespace ttrace::replay {
namespace {

constexpr std::array<std::pair<ErrorCode, std::string_view>, 19> kNames{{
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

DiagnosticCode diagnosticCodeFor(ErrorCode code) {
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
    case ErrorCode::ReplayFailed: return DiagnosticCode::AgentReplayFailed;
    case ErrorCode::UnknownAgentError: return DiagnosticCode::AgentError;
    }
    return DiagnosticCode::AgentError;
}

std::string Error::toString() const {
    return std::string(errorCodeName(code)) + ": " + message;
}

} // namespace ttrace::replay
