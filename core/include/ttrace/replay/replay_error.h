#pragma once
// Typed failures of the localize client: transport (timeouts, a vanished agent), validation of
// what the agent sent, and the agent's own error codes (docs/protocol.md, "Replies").
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "ttrace/io/diagnostic_code.h"

namespace ttrace::replay {

enum class ErrorCode {
    // Client side.
    Timeout,       // no reply within the request's time limit
    Unreachable,   // the agent stopped answering pings while a request was outstanding
    Cancelled,     // the caller cancelled the request
    Closed,        // the client was destroyed with the request pending
    BadReply,      // the reply violates the protocol (fields, frames, sizes, placements)
    ReplyTooLarge, // the reply exceeds the client's header or total size limit
    TokenFile,     // the token file is missing, unreadable or malformed
    BadEndpoint,   // the endpoint cannot be connected to
    // The agent's status "busy".
    Busy,
    // The agent's error codes.
    Malformed,
    TooLarge,
    Version,
    Unauthenticated,
    UnknownOp,
    UnknownModule,
    NoReferenceTensor,
    NotReplayable,
    LayoutTooSmall, // a relaunch smaller than the job lacks a group the replay needs
    ReplayFailed,
    UnknownAgentError, // an error code this client does not know (a newer agent)
};

// Why the agent refused to replay a row, typed (the error's optional `reason`, protocol.md);
// every front end words it with refusalText (localize_text.h).
enum class Refusal {
    None,                // no typed reason given (an older agent, or another error)
    Stochastic,          // the module draws random numbers
    RecomputeStochastic, // a recompute row of a module that draws random numbers
    RecomputeGradients,  // a recompute row has no gradients of its own
    CallNotRecorded,     // the call named (`@call<k>`, `@recompute`) was not recorded
    HandoffUnrecorded,   // a side of a pipeline hand-off was not captured
    PartialIntegerInput, // an integer input held as partial sums (token counts over expert-DP)
    Unknown,             // a reason this client does not know (a newer agent)
};
// The agent's wire reason to ours ("" -> None).
Refusal refusalOf(std::string_view wireReason);

// The stable name used in JSON and messages, e.g. "not_replayable", "timeout".
std::string_view errorCodeName(ErrorCode code);
// The agent's wire code to ours; UnknownAgentError for codes this client does not know.
ErrorCode agentErrorCode(std::string_view wireCode);
// The code of the finding that reports a failure: a code of the same name.
DiagnosticCode diagnosticCodeFor(ErrorCode code);

struct Error {
    ErrorCode code = ErrorCode::BadReply;
    std::string message; // one sentence for a human, naming the request and what was wrong
    Refusal refusal = Refusal::None;

    [[nodiscard]] std::string toString() const;
};

// A value or the reason there is none (C++20 has no std::expected).
template <typename T> class Result {
public:
    Result(T value) // NOLINT(google-explicit-constructor): returning a value reads naturally
        : state_(std::move(value)) {}
    Result(Error error) // NOLINT(google-explicit-constructor)
        : state_(std::move(error)) {}

    [[nodiscard]] bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }
    [[nodiscard]] const T& value() const& { return std::get<0>(state_); }
    [[nodiscard]] T& value() & { return std::get<0>(state_); }
    [[nodiscard]] T&& value() && { return std::get<0>(std::move(state_)); }
    [[nodiscard]] const Error& error() const { return std::get<1>(state_); }
    const T* operator->() const { return &value(); }
    T* operator->() { return &value(); }

private:
    std::variant<T, Error> state_;
};

} // namespace ttrace::replay
