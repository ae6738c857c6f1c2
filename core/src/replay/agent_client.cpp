#include "ttrace/replay/agent_client.h"

#include "client_loop.h"
#include "request_codec.h"

#include <charconv>

namespace ttrace::replay {
namespace {

template <typename T> std::pair<Completion<T>, std::future<Result<T>>> promised() {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    return {[promise](Result<T> r) { promise->set_value(std::move(r)); }, std::move(future)};
}

// Adapts a typed completion to the loop's: envelope errors pass through, the body is parsed.
template <typename T, typename Parse>
ClientLoop::Finish finishWith(Completion<T> done, Parse parse) {
    return [done = std::move(done), parse](Result<Incoming> in) {
        if (!in) {
            done(in.error());
            return;
        }
        done(parse(in.value()));
    };
}

} // namespace

Result<std::string> endpointFromHostPort(std::string_view hostPort) {
    const auto colon = hostPort.rfind(':');
    auto bad = [&]() {
        return Error{ErrorCode::BadEndpoint,
                     "'" + std::string(hostPort) + "' is not HOST:PORT (e.g. 127.0.0.1:5555)"};
    };
    if (colon == std::string_view::npos || colon == 0) {
        return bad();
    }
    const auto host = hostPort.substr(0, colon);
    const auto portText = hostPort.substr(colon + 1);
    int port = 0;
    const auto [end, ec] =
        std::from_chars(portText.data(), portText.data() + portText.size(), port);
    if (ec != std::errc{} || end != portText.data() + portText.size() || port < 1 || port > 65535) {
        return bad();
    }
    for (const char c : host) {
        // Host names, IPv4 and bracketed IPv6: nothing that could change the endpoint's meaning.
        const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                             c == '_' || c == '[' || c == ']' || c == ':';
        if (!allowed) {
            return bad();
        }
    }
    return "tcp://" + std::string(host) + ":" + std::to_string(port);
}

AgentClient::AgentClient(ClientOptions options)
    : loop_(std::make_unique<ClientLoop>(std::move(options))) {}

AgentClient::~AgentClient() = default;

const ClientOptions& AgentClient::options() const {
    return loop_->options();
}

void AgentClient::hello(Completion<AgentInfo> done, CancelToken cancel) {
    const auto token = loop_->options().token;
    loop_->submit(
        "hello", [token](std::int64_t id) { return encodeRequest("hello", id, token); },
        loop_->options().handshakeTimeout, std::move(cancel), {},
        finishWith<AgentInfo>(std::move(done),
                              [](const Incoming& in) { return in.header.hello(); }));
}

void AgentClient::ping(Completion<PingReply> done, CancelToken cancel) {
    const auto token = loop_->options().token;
    loop_->submit(
        "ping", [token](std::int64_t id) { return encodeRequest("ping", id, token); },
        loop_->options().handshakeTimeout, std::move(cancel), {},
        finishWith<PingReply>(std::move(done),
                              [](const Incoming& in) { return in.header.ping(); }));
}

void AgentClient::replay(const ReplayRequest& request, Completion<ReplayReply> done,
                         CancelToken cancel, ProgressCallback progress) {
    const auto token = loop_->options().token;
    loop_->submit(
        "replay: " + request.describe(),
        [token, request](std::int64_t id) { return encodeReplayRequest(id, token, request); },
        loop_->options().requestTimeout, std::move(cancel), std::move(progress),
        finishWith<ReplayReply>(std::move(done), [](const Incoming& in) {
            std::vector<std::span<const std::byte>> payloads;
            for (std::size_t i = 1; i < in.frames.size(); ++i) {
                payloads.emplace_back(static_cast<const std::byte*>(in.frames[i].data()),
                                      in.frames[i].size());
            }
            return in.header.replay(payloads);
        }));
}

void AgentClient::shutdownAgent(Completion<Empty> done, CancelToken cancel) {
    const auto token = loop_->options().token;
    loop_->submit(
        "shutdown", [token](std::int64_t id) { return encodeRequest("shutdown", id, token); },
        loop_->options().requestTimeout, std::move(cancel), {},
        finishWith<Empty>(std::move(done), [](const Incoming&) { return Result<Empty>(Empty{}); }));
}

std::future<Result<AgentInfo>> AgentClient::hello(CancelToken cancel) {
    auto [done, future] = promised<AgentInfo>();
    hello(std::move(done), std::move(cancel));
    return std::move(future);
}

std::future<Result<PingReply>> AgentClient::ping(CancelToken cancel) {
    auto [done, future] = promised<PingReply>();
    ping(std::move(done), std::move(cancel));
    return std::move(future);
}

std::future<Result<ReplayReply>>
AgentClient::replay(const ReplayRequest& request, CancelToken cancel, ProgressCallback progress) {
    auto [done, future] = promised<ReplayReply>();
    replay(request, std::move(done), std::move(cancel), std::move(progress));
    return std::move(future);
}

std::future<Result<Empty>> AgentClient::shutdownAgent(CancelToken cancel) {
    auto [done, future] = promised<Empty>();
    shutdownAgent(std::move(done), std::move(cancel));
    return std::move(future);
}

} // namespace ttrace::replay
