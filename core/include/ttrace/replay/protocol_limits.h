#pragma once
// Constants of the localize protocol, version 2 (docs/protocol.md, "Limits and timeouts").
#include <chrono>
#include <cstdint>

namespace ttrace::replay {

inline constexpr int kProtocolVersion = 2;
// The agent answers requests above this size with `too_large`; ours are a few hundred bytes.
inline constexpr std::uint64_t kMaxRequestBytes = 64 * 1024;
inline constexpr std::uint64_t kDefaultMaxHeaderBytes = 16ull * 1024 * 1024;
inline constexpr std::uint64_t kDefaultMaxReplyBytes = 4ull * 1024 * 1024 * 1024;
inline constexpr std::chrono::milliseconds kDefaultHandshakeTimeout{10'000};
inline constexpr std::chrono::milliseconds kDefaultRequestTimeout{300'000};
// While a request is outstanding the client pings the agent this often; the agent answers
// pings at once even while it replays, so a silence of kDefaultLivenessTimeout means the agent
// (or the tunnel to it) is gone, long before the request's own timeout.
inline constexpr std::chrono::milliseconds kDefaultPingInterval{1'000};
inline constexpr std::chrono::milliseconds kDefaultLivenessTimeout{15'000};

} // namespace ttrace::replay
