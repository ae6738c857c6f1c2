#pragma once
// A scripted stand-in for the agent's rank 0: a real ZeroMQ ROUTER socket on loopback, served
// by its own thread, whose answer to each request is decided by the test. Pings are answered
// at once (like the real agent) unless the test silences them.
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ttrace::replay::test {

class ScriptedAgent {
public:
    using Frames = std::vector<std::string>;
    // Returns the replies to send for one request (empty: stay silent).
    using Handler = std::function<std::vector<Frames>(const nlohmann::json& request)>;

    explicit ScriptedAgent(Handler handler)
        : handler_(std::move(handler))
        , socket_(context_, zmq::socket_type::router) {
        socket_.set(zmq::sockopt::linger, 0);
        socket_.bind("tcp://127.0.0.1:*");
        const auto endpoint = socket_.get(zmq::sockopt::last_endpoint);
        port_ = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
        thread_ = std::thread([this] { run(); });
    }
    ~ScriptedAgent() {
        stop_ = true;
        thread_.join();
    }

    [[nodiscard]] std::string endpoint() const {
        return "tcp://127.0.0.1:" + std::to_string(port_);
    }
    std::atomic<bool> answerPings{true};
    std::atomic<bool> busy{false};
    std::atomic<bool> vanishOnReplay{false}; // close the socket when a replay arrives
    std::atomic<int> replyDelayMs{0};        // replies to replays are sent this much later
    std::atomic<int> replays{0};
    std::atomic<int> pings{0};

    static Frames reply(const nlohmann::json& request, nlohmann::json fields,
                        std::string status = "ok") {
        fields["protocol"] = 2;
        fields["id"] = request.at("id");
        fields["status"] = std::move(status);
        return {fields.dump()};
    }
    static Frames error(const nlohmann::json& request, const std::string& code,
                        const std::string& message) {
        return reply(request, {{"error", {{"code", code}, {"message", message}}}}, "error");
    }

private:
    struct Delayed {
        std::chrono::steady_clock::time_point due;
        std::string identity;
        Frames frames;
    };

    void flushDelayed() {
        const auto now = std::chrono::steady_clock::now();
        for (auto it = delayed_.begin(); it != delayed_.end();) {
            if (it->due <= now) {
                zmq::message_t id(it->identity.data(), it->identity.size());
                send(id, it->frames);
                it = delayed_.erase(it);
            } else {
                ++it;
            }
        }
    }

    void run() {
        while (!stop_) {
            flushDelayed();
            std::vector<zmq::pollitem_t> items{{socket_.handle(), 0, ZMQ_POLLIN, 0}};
            zmq::poll(items, std::chrono::milliseconds(10));
            if (!(items[0].revents & ZMQ_POLLIN)) {
                continue;
            }
            std::vector<zmq::message_t> parts;
            zmq::message_t part;
            do {
                (void)socket_.recv(part);
                parts.emplace_back(std::move(part));
            } while (parts.back().more());
            const auto request = nlohmann::json::parse(parts.at(1).to_string_view());
            const std::string op = request.at("op");
            if (op == "ping") {
                ++pings;
                if (answerPings) {
                    send(parts[0], reply(request, {{"busy", busy.load()}, {"uptime_s", 1.0}}));
                }
                continue;
            }
            if (op == "replay") {
                ++replays;
                if (vanishOnReplay) {
                    socket_.close(); // the agent process dies mid-request
                    return;
                }
            }
            const auto delay = std::chrono::milliseconds(op == "replay" ? replyDelayMs.load() : 0);
            for (auto& frames : handler_(request)) {
                if (delay.count() > 0) {
                    delayed_.push_back({std::chrono::steady_clock::now() + delay,
                                        std::string(parts[0].to_string_view()), std::move(frames)});
                } else {
                    send(parts[0], frames);
                }
            }
        }
    }
    void send(const zmq::message_t& identity, const Frames& frames) {
        socket_.send(zmq::buffer(identity.data(), identity.size()), zmq::send_flags::sndmore);
        for (std::size_t i = 0; i < frames.size(); ++i) {
            socket_.send(zmq::buffer(frames[i]),
                         i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        }
    }

    Handler handler_;
    zmq::context_t context_;
    zmq::socket_t socket_;
    int port_ = 0;
    std::vector<Delayed> delayed_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace ttrace::replay::test
