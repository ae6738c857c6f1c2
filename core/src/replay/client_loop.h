#pragma once
// The owner thread of an AgentClient: the only code that touches the ZeroMQ socket.
#include "ttrace/replay/agent_client.h"
#include "ttrace/replay/reply_parser.h"

#include <zmq.hpp>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace ttrace::replay {

// A validated reply envelope with its frames (frame 0 is the header).
struct Incoming {
    ReplyHeader header;
    std::vector<zmq::message_t> frames;
};

class ClientLoop {
public:
    using Clock = std::chrono::steady_clock;
    using Finish = std::function<void(Result<Incoming>)>;

    explicit ClientLoop(ClientOptions options);
    ~ClientLoop();

    // Queues a request; `encode` builds its header from the id the loop assigns.
    void submit(std::string what, std::function<std::string(std::int64_t id)> encode,
                std::chrono::milliseconds timeout, CancelToken cancel, ProgressCallback progress,
                Finish finish);
    [[nodiscard]] const ClientOptions& options() const { return options_; }

private:
    struct Pending {
        std::string what; // for messages, e.g. "replay: forward of layers.0 (iteration 0, ...)"
        std::string header;
        bool sent = false;
        Clock::time_point start, deadline;
        CancelToken cancel;
        ProgressCallback progress;
        Finish finish;
    };

    void run();
    bool openSocket();
    void closeSocket();
    void takeQueued();
    void sendUnsent();
    void receiveAll();
    void watchConnection();
    void receiveOne();
    void dispatch(std::vector<zmq::message_t> frames, std::uint64_t total);
    void checkDeadlines();
    void keepAlive();
    void failAll(const Error& error);
    void complete(std::int64_t id, Result<Incoming> result);

    ClientOptions options_;
    zmq::context_t context_;
    std::unique_ptr<zmq::socket_t> socket_;
    std::unique_ptr<zmq::socket_t> monitor_; // connection events of socket_
    std::mutex mutex_;                       // guards queue_ and nextId_
    std::deque<std::pair<std::int64_t, Pending>> queue_;
    std::int64_t nextId_ = 1;
    std::map<std::int64_t, Pending> pending_;         // owner thread only
    std::map<std::int64_t, Clock::time_point> pings_; // liveness pings in flight
    std::optional<Error> broken_; // the socket could not be set up: every request fails so
    Clock::time_point lastHeard_{}, lastPing_{};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace ttrace::replay
