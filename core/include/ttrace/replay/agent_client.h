#pragma once
// Client of the localize agent (docs/protocol.md). One owner thread owns the ZeroMQ DEALER
// socket; every public method only queues work for it and returns at once, so the explorer can
// call it from any thread. Completion and progress callbacks run on the owner thread: keep them
// short, hand results to your own thread, and never destroy the client from inside one.
#include "ttrace/replay/agent_info.h"
#include "ttrace/replay/cancel_token.h"
#include "ttrace/replay/protocol_limits.h"
#include "ttrace/replay/replay_error.h"
#include "ttrace/replay/replay_reply.h"
#include "ttrace/replay/replay_request.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <variant>

namespace ttrace::replay {

struct ClientOptions {
    std::string endpoint; // ZeroMQ endpoint, e.g. "tcp://127.0.0.1:5555" (see endpointFromHostPort)
    std::string token;    // 64 hex digits, from readTokenFile
    std::chrono::milliseconds handshakeTimeout = kDefaultHandshakeTimeout; // hello and ping
    std::chrono::milliseconds requestTimeout = kDefaultRequestTimeout;     // replay and shutdown
    std::chrono::milliseconds pingInterval = kDefaultPingInterval;
    // No answer at all for this long while a request waits: the agent is gone (0 = never).
    std::chrono::milliseconds livenessTimeout = kDefaultLivenessTimeout;
    std::uint64_t maxHeaderBytes = kDefaultMaxHeaderBytes; // a reply's frame 0
    std::uint64_t maxReplyBytes = kDefaultMaxReplyBytes;   // all frames of one reply
};

// "HOST:PORT" (or "[V6]:PORT") to "tcp://HOST:PORT"; BadEndpoint when it is not of that form.
Result<std::string> endpointFromHostPort(std::string_view hostPort);

// How a waiting request is doing, reported each time the agent answers a liveness ping.
struct RequestProgress {
    double elapsedSeconds = 0.0;
    bool agentBusy = false; // the agent says it is running a replay
};

template <typename T> using Completion = std::function<void(Result<T>)>;
using ProgressCallback = std::function<void(const RequestProgress&)>;
struct Empty {};

class ClientLoop; // the owner thread, private to core (keeps ZeroMQ out of this header)

class AgentClient {
public:
    explicit AgentClient(ClientOptions options);
    ~AgentClient(); // pending requests complete with Closed before it returns
    AgentClient(const AgentClient&) = delete;
    AgentClient& operator=(const AgentClient&) = delete;

    // Asynchronous requests: `done` runs exactly once, on the owner thread.
    void hello(Completion<AgentInfo> done, CancelToken cancel = {});
    void ping(Completion<PingReply> done, CancelToken cancel = {});
    void replay(const ReplayRequest& request, Completion<ReplayReply> done, CancelToken cancel = {},
                ProgressCallback progress = {});
    void shutdownAgent(Completion<Empty> done, CancelToken cancel = {});

    // The same as futures, for callers that block on a worker thread.
    std::future<Result<AgentInfo>> hello(CancelToken cancel = {});
    std::future<Result<PingReply>> ping(CancelToken cancel = {});
    std::future<Result<ReplayReply>> replay(const ReplayRequest& request, CancelToken cancel = {},
                                            ProgressCallback progress = {});
    std::future<Result<Empty>> shutdownAgent(CancelToken cancel = {});

    [[nodiscard]] const ClientOptions& options() const;

private:
    std::unique_ptr<ClientLoop> loop_;
};

} // namespace ttrace::replay
