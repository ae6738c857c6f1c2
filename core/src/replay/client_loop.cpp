#include "client_loop.h"

#include "request_codec.h"

#include <algorithm>
#include <limits>

namespace ttrace::replay {
namespace {

// How long the owner thread sleeps in poll between checks of the queue, cancellations and
// deadlines: the latency of a cancel or a new request, at negligible cost.
constexpr std::chrono::milliseconds kTurn{10};

double secondsSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string seconds(std::chrono::milliseconds ms) {
    const auto s = static_cast<double>(ms.count()) / 1000.0;
    std::string text = std::to_string(s);
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') {
        text.pop_back();
    }
    return text + " s";
}

} // namespace

ClientLoop::ClientLoop(ClientOptions options)
    : options_(std::move(options))
    , context_(1) {
    thread_ = std::thread([this] { run(); });
}

ClientLoop::~ClientLoop() {
    stop_.store(true);
    thread_.join();
}

void ClientLoop::submit(std::string what, std::function<std::string(std::int64_t)> encode,
                        std::chrono::milliseconds timeout, CancelToken cancel,
                        ProgressCallback progress, Finish finish) {
    const std::lock_guard lock(mutex_);
    const std::int64_t id = nextId_++;
    Pending p;
    p.what = std::move(what);
    p.header = encode(id);
    p.start = Clock::now();
    p.deadline = p.start + timeout;
    p.cancel = std::move(cancel);
    p.progress = std::move(progress);
    p.finish = std::move(finish);
    queue_.emplace_back(id, std::move(p));
}

bool ClientLoop::openSocket() {
    try {
        socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
        socket_->set(zmq::sockopt::linger, 0);
        // Per frame: ZeroMQ drops the connection to a peer that sends a larger one, before
        // allocating it. The per-reply total is checked as frames arrive.
        const auto frameLimit = std::min<std::uint64_t>(
            std::max(options_.maxReplyBytes, options_.maxHeaderBytes),
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
        socket_->set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(frameLimit));
        // Disconnections are watched so that a request whose connection dropped (the agent
        // exited, or sent a frame over the limit) fails at once instead of at its timeout.
        static std::atomic<int> monitors{0};
        const std::string monitorAddress =
            "inproc://ttrace-agent-monitor-" + std::to_string(monitors++);
        if (zmq_socket_monitor(socket_->handle(), monitorAddress.c_str(), ZMQ_EVENT_DISCONNECTED) !=
            0) {
            throw zmq::error_t();
        }
        monitor_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
        monitor_->set(zmq::sockopt::linger, 0);
        monitor_->connect(monitorAddress);
        socket_->connect(options_.endpoint);
        return true;
    } catch (const zmq::error_t& e) {
        broken_ = Error{ErrorCode::BadEndpoint,
                        "cannot connect to '" + options_.endpoint + "': " + e.what()};
        return false;
    }
}

void ClientLoop::run() {
    openSocket();
    lastHeard_ = Clock::now();
    while (!stop_.load()) {
        takeQueued();
        if (broken_) {
            failAll(*broken_);
            std::this_thread::sleep_for(kTurn);
            continue;
        }
        try {
            sendUnsent();
            std::vector<zmq::pollitem_t> items{{socket_->handle(), 0, ZMQ_POLLIN, 0},
                                               {monitor_->handle(), 0, ZMQ_POLLIN, 0}};
            zmq::poll(items, kTurn);
            receiveAll();
            watchConnection();
            checkDeadlines();
            keepAlive();
        } catch (const zmq::error_t& e) {
            failAll({ErrorCode::Unreachable, std::string("ZeroMQ failed: ") + e.what()});
        }
    }
    takeQueued();
    failAll({ErrorCode::Closed, "the client was closed before the agent answered"});
    closeSocket();
}

void ClientLoop::closeSocket() {
    if (socket_) {
        zmq_socket_monitor(socket_->handle(), nullptr, 0);
    }
    monitor_.reset();
    socket_.reset();
}

void ClientLoop::watchConnection() {
    zmq::message_t event;
    bool dropped = false;
    while (monitor_->recv(event, zmq::recv_flags::dontwait)) {
        // An event is two frames: (uint16 event, uint32 value), then the endpoint.
        dropped = true;
        while (event.more()) {
            (void)monitor_->recv(event, zmq::recv_flags::none);
        }
    }
    if (!dropped) {
        return;
    }
    pings_.clear();
    std::vector<std::int64_t> sent;
    for (const auto& [id, p] : pending_) {
        if (p.sent) {
            sent.push_back(id);
        }
    }
    // A ROUTER routes a reply to the connection its request came on: after a drop, nothing
    // sent before it can be answered.
    for (const auto id : sent) {
        complete(
            id,
            Error{ErrorCode::Unreachable,
                  pending_.at(id).what + ": the connection to the agent at " + options_.endpoint +
                      " dropped (the agent exited, or sent a frame over the " +
                      std::to_string(std::max(options_.maxReplyBytes, options_.maxHeaderBytes)) +
                      "-byte limit)"});
    }
    // After a protocol error (such as a frame over ZMQ_MAXMSGSIZE) ZeroMQ does not reconnect
    // on its own: a fresh socket does, and serves the requests still unsent.
    closeSocket();
    openSocket();
}

void ClientLoop::takeQueued() {
    std::deque<std::pair<std::int64_t, Pending>> taken;
    {
        const std::lock_guard lock(mutex_);
        taken.swap(queue_);
    }
    for (auto& [id, p] : taken) {
        pending_.emplace(id, std::move(p));
    }
}

void ClientLoop::sendUnsent() {
    for (auto& [id, p] : pending_) {
        if (!p.sent) {
            // Without a connected peer a DEALER send would block: retry on the next turn.
            p.sent = socket_->send(zmq::buffer(p.header), zmq::send_flags::dontwait).has_value();
        }
    }
}

void ClientLoop::receiveAll() {
    // Bounded per turn so deadlines and cancellations are still checked under a reply flood.
    for (int i = 0; i < 64; ++i) {
        zmq::message_t first;
        if (!socket_->recv(first, zmq::recv_flags::dontwait)) {
            return;
        }
        lastHeard_ = Clock::now();
        std::vector<zmq::message_t> frames;
        std::uint64_t total = first.size();
        const bool headerTooLarge = first.size() > options_.maxHeaderBytes;
        bool more = first.more();
        frames.push_back(std::move(first));
        while (more) {
            zmq::message_t part;
            (void)socket_->recv(part, zmq::recv_flags::none); // parts of a message arrive together
            more = part.more();
            total += part.size();
            if (total <= options_.maxReplyBytes) {
                frames.push_back(std::move(part)); // beyond the limit, frames are dropped at once
            }
        }
        if (headerTooLarge) {
            failAll({ErrorCode::ReplyTooLarge,
                     "the agent sent a reply header of " + std::to_string(frames.front().size()) +
                         " bytes (the limit is " + std::to_string(options_.maxHeaderBytes) + ")"});
            continue;
        }
        dispatch(std::move(frames), total);
    }
}

void ClientLoop::dispatch(std::vector<zmq::message_t> frames, std::uint64_t total) {
    auto header = ReplyHeader::parse(frames.front().to_string_view());
    if (!header) {
        // Not attributable to a request: the agent (or whatever answers) is broken.
        failAll(header.error());
        return;
    }
    const auto& env = header->envelope();
    if (!env.id) {
        failAll(env.error.value_or(Error{ErrorCode::BadReply, "reply without a request id"}));
        return;
    }
    const std::int64_t id = *env.id;
    if (pings_.erase(id) > 0) {
        auto ping = env.error ? Result<PingReply>(*env.error) : header->ping();
        for (auto& [pid, p] : pending_) {
            if (p.progress && ping) {
                p.progress({secondsSince(p.start), ping->busy});
            }
        }
        return;
    }
    if (!pending_.contains(id)) {
        return; // a late reply to a request we gave up on
    }
    if (total > options_.maxReplyBytes) {
        complete(id,
                 Error{ErrorCode::ReplyTooLarge,
                       "the reply to " + pending_.at(id).what + " has " + std::to_string(total) +
                           " bytes (the limit is " + std::to_string(options_.maxReplyBytes) + ")"});
        return;
    }
    if (env.error) {
        complete(id, *env.error);
        return;
    }
    complete(id, Incoming{std::move(header).value(), std::move(frames)});
}

void ClientLoop::checkDeadlines() {
    const auto now = Clock::now();
    std::vector<std::pair<std::int64_t, Error>> done;
    for (const auto& [id, p] : pending_) {
        if (p.cancel.cancelled()) {
            done.emplace_back(id, Error{ErrorCode::Cancelled, p.what + " was cancelled"});
        } else if (now >= p.deadline) {
            const auto limit =
                std::chrono::duration_cast<std::chrono::milliseconds>(p.deadline - p.start);
            done.emplace_back(id, Error{ErrorCode::Timeout,
                                        "no reply to " + p.what + " within " + seconds(limit)});
        }
    }
    for (auto& [id, error] : done) {
        complete(id, std::move(error));
    }
}

void ClientLoop::keepAlive() {
    if (pending_.empty() || options_.pingInterval.count() <= 0) {
        return;
    }
    const auto now = Clock::now();
    if (options_.livenessTimeout.count() > 0) {
        auto since = lastHeard_;
        for (const auto& [id, p] : pending_) {
            since = std::max(since, p.start); // silence counts only while someone waits
        }
        if (now - since > options_.livenessTimeout) {
            lastHeard_ = now;
            failAll({ErrorCode::Unreachable, "the agent at " + options_.endpoint +
                                                 " stopped answering (no reply to pings for " +
                                                 seconds(options_.livenessTimeout) + ")"});
            return;
        }
    }
    if (now - lastPing_ < options_.pingInterval) {
        return;
    }
    std::int64_t id = 0;
    {
        const std::lock_guard lock(mutex_);
        id = nextId_++;
    }
    if (socket_->send(zmq::buffer(encodeRequest("ping", id, options_.token)),
                      zmq::send_flags::dontwait)) {
        pings_[id] = now;
    }
    lastPing_ = now;
    std::erase_if(pings_, [&](const auto& entry) {
        return now - entry.second > options_.livenessTimeout + options_.pingInterval;
    });
}

void ClientLoop::failAll(const Error& error) {
    std::vector<std::int64_t> ids;
    for (const auto& [id, p] : pending_) {
        ids.push_back(id);
    }
    for (const auto id : ids) {
        Error e = error;
        e.message = pending_.at(id).what + ": " + e.message;
        complete(id, std::move(e));
    }
}

void ClientLoop::complete(std::int64_t id, Result<Incoming> result) {
    auto node = pending_.extract(id);
    if (node.empty()) {
        return;
    }
    try {
        node.mapped().finish(std::move(result));
    } catch (...) {
        // A throwing callback must not take the owner thread (and every other request) down.
    }
}

} // namespace ttrace::replay
