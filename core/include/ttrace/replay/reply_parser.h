#pragma once
// Validation of everything the agent sends. Nothing from the network is trusted: every field
// is type-checked, every size is compared with shape * itemsize in overflow-checked
// arithmetic, every placement box is checked against its shapes, and the frame count must
// match. A bad reply is an Error naming what is wrong, never a crash.
#include "ttrace/replay/agent_info.h"
#include "ttrace/replay/replay_error.h"
#include "ttrace/replay/replay_reply.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ttrace::replay {

// Header fields every reply has.
struct ReplyEnvelope {
    std::optional<std::int64_t> id; // absent: the agent could not parse the request
    int protocol = 0;
    std::string status;         // "ok", "busy" or "error"
    std::optional<Error> error; // set for "busy" and "error"
};

// A reply's header as a parsed JSON document, kept opaque so the JSON library stays out of
// public headers.
class ReplyHeader {
public:
    ReplyHeader();
    ~ReplyHeader();
    ReplyHeader(ReplyHeader&&) noexcept;
    ReplyHeader& operator=(ReplyHeader&&) noexcept;

    // Parses frame 0 (UTF-8 JSON object) and its envelope fields.
    static Result<ReplyHeader> parse(std::string_view text);
    [[nodiscard]] const ReplyEnvelope& envelope() const { return envelope_; }

    [[nodiscard]] Result<AgentInfo> hello() const;
    [[nodiscard]] Result<PingReply> ping() const;
    // The `replay` body with its payload frames (frames 1..n of the message).
    [[nodiscard]] Result<ReplayReply>
    replay(std::span<const std::span<const std::byte>> payloads) const;

private:
    struct Json;
    ReplyEnvelope envelope_;
    std::unique_ptr<Json> json_;
};

} // namespace ttrace::replay
