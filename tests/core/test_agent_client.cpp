// The localize client over real sockets against a scripted agent: handshake, replies with
// payloads, every failure a network can produce (timeouts, busy, agent errors, oversized,
// truncated and garbage replies, an agent that vanishes or goes silent mid-request),
// cancellation, progress, closing with requests pending, tokens and endpoints.
#include "replay/reply_builder.h"
#include "replay/scripted_agent.h"
#include "ttrace/replay/agent_client.h"
#include "ttrace/replay/token_file.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace ttrace;
using namespace ttrace::replay;
using namespace ttrace::replay::test;
using namespace std::chrono_literals;

namespace {

const std::string kToken(64, 'a');

ClientOptions optionsFor(const ScriptedAgent& agent) {
    ClientOptions o;
    o.endpoint = agent.endpoint();
    o.token = kToken;
    o.handshakeTimeout = 5s;
    o.requestTimeout = 10s;
    o.pingInterval = 100ms;
    o.livenessTimeout = 2s;
    return o;
}

ScriptedAgent::Frames replayFrames(const json& request) {
    const json tensors =
        json::array({rowShardEntry("nominal", request.at("module"), 0, 0, 1, 2, 3, 1),
                     rowShardEntry("nominal", request.at("module"), 1, 1, 1, 2, 3, 2)});
    auto frames = ScriptedAgent::reply(request, {{"seconds", 0.01}, {"tensors", tensors}});
    const auto a = floatBytes({1, 2, 3});
    const auto b = floatBytes({4, 5, 6});
    frames.emplace_back(reinterpret_cast<const char*>(a.data()), a.size());
    frames.emplace_back(reinterpret_cast<const char*>(b.data()), b.size());
    return frames;
}

// A well-behaved agent: hello, replay and shutdown answered; wrong tokens refused.
ScriptedAgent::Handler wellBehaved() {
    return [](const json& request) -> std::vector<ScriptedAgent::Frames> {
        if (request.at("token") != kToken) {
            return {ScriptedAgent::error(request, "unauthenticated", "wrong or missing token")};
        }
        const std::string op = request.at("op");
        if (op == "hello") {
            auto hello = helloHeader(request.at("id"));
            return {{hello.dump()}};
        }
        if (op == "replay") {
            return {replayFrames(request)};
        }
        return {ScriptedAgent::reply(request, json::object())};
    };
}

ReplayRequest request(const std::string& module = "layers.0") {
    ReplayRequest r;
    r.module = module;
    r.variants = {"nominal", "perturbed-1"};
    return r;
}

template <typename T>
Result<T> waitFor(std::future<Result<T>> f, std::chrono::seconds limit = 20s) {
    if (f.wait_for(limit) != std::future_status::ready) {
        qFatal("a client request did not complete: the client hangs");
    }
    return f.get();
}

template <typename T> void expectError(const Result<T>& r, ErrorCode code, const char* text = "") {
    QVERIFY2(!r.ok(), "expected an error");
    QVERIFY2(r.error().code == code, r.error().toString().c_str());
    QVERIFY2(r.error().message.find(text) != std::string::npos, r.error().message.c_str());
}

} // namespace

class TestAgentClient : public QObject {
    Q_OBJECT
private slots:
    void helloPingReplayAndShutdown() {
        ScriptedAgent agent(wellBehaved());
        AgentClient client(optionsFor(agent));
        const auto info = waitFor(client.hello());
        QVERIFY2(info.ok(), info.ok() ? "" : info.error().toString().c_str());
        QCOMPARE(info->worldSize, 4);
        QVERIFY(waitFor(client.ping()).ok());
        const auto reply = waitFor(client.replay(request("layers.7")));
        QVERIFY2(reply.ok(), reply.ok() ? "" : reply.error().toString().c_str());
        QCOMPARE(reply->shards.size(), std::size_t{2});
        QCOMPARE(reply->shards[0].id.module, std::string("layers.7"));
        QVERIFY(waitFor(client.shutdownAgent()).ok());
    }

    void callbacksRunOnTheOwnerThreadAndRequestsOverlap() {
        ScriptedAgent agent(wellBehaved());
        AgentClient client(optionsFor(agent));
        std::promise<std::thread::id> where;
        client.ping([&](Result<PingReply> r) {
            QVERIFY(r.ok());
            where.set_value(std::this_thread::get_id());
        });
        auto f = where.get_future();
        QVERIFY(f.wait_for(10s) == std::future_status::ready);
        QVERIFY(f.get() != std::this_thread::get_id());
        std::vector<std::future<Result<ReplayReply>>> many;
        for (int i = 0; i < 8; ++i) {
            many.push_back(client.replay(request("m" + std::to_string(i))));
        }
        for (int i = 0; i < 8; ++i) {
            const auto r = waitFor(std::move(many[static_cast<std::size_t>(i)]));
            QVERIFY(r.ok());
            QCOMPARE(r->shards[0].id.module, "m" + std::to_string(i)); // replies matched by id
        }
    }

    void wrongTokenIsUnauthenticated() {
        ScriptedAgent agent(wellBehaved());
        auto o = optionsFor(agent);
        o.token = std::string(64, 'b');
        AgentClient client(o);
        expectError(waitFor(client.hello()), ErrorCode::Unauthenticated, "token");
    }

    void otherProtocolVersionIsRefused() {
        ScriptedAgent agent([](const json& r) -> std::vector<ScriptedAgent::Frames> {
            auto hello = helloHeader(r.at("id"));
            hello["protocol"] = 1; // an agent from before replays of hand-off and call rows
            return {{hello.dump()}};
        });
        AgentClient client(optionsFor(agent));
        expectError(waitFor(client.hello()), ErrorCode::Version, "protocol 1");
    }

    void agentErrorsAndBusyKeepTheirCodes() {
        ScriptedAgent agent([](const json& r) -> std::vector<ScriptedAgent::Frames> {
            if (r.at("module") == "busy") {
                return {ScriptedAgent::reply(r, json::object(), "busy")};
            }
            return {ScriptedAgent::error(r, "not_replayable", "stochastic: draws random numbers")};
        });
        AgentClient client(optionsFor(agent));
        expectError(waitFor(client.replay(request("busy"))), ErrorCode::Busy);
        expectError(waitFor(client.replay(request("drop"))), ErrorCode::NotReplayable,
                    "stochastic");
    }

    void silentAgentTimesOutAndLateRepliesAreDropped() {
        std::atomic<int> seen{0};
        ScriptedAgent agent([&](const json& r) -> std::vector<ScriptedAgent::Frames> {
            if (++seen == 1) {
                return {}; // never answers the first replay...
            }
            return {replayFrames(r)};
        });
        auto o = optionsFor(agent);
        o.requestTimeout = 300ms;
        AgentClient client(o);
        const auto t0 = std::chrono::steady_clock::now();
        expectError(waitFor(client.replay(request())), ErrorCode::Timeout, "within 0.3 s");
        QVERIFY(std::chrono::steady_clock::now() - t0 < 3s);
        QVERIFY(waitFor(client.replay(request())).ok()); // ...the next one still works
    }

    void lateReplyToAnAbandonedRequestIsIgnored() {
        ScriptedAgent agent(wellBehaved());
        agent.replyDelayMs = 500;
        auto o = optionsFor(agent);
        o.requestTimeout = 200ms;
        AgentClient client(o);
        expectError(waitFor(client.replay(request())), ErrorCode::Timeout);
        o.requestTimeout = 10s;
        agent.replyDelayMs = 0;
        std::this_thread::sleep_for(500ms); // the late reply arrives now
        QVERIFY(waitFor(client.ping()).ok());
    }

    void progressIsReportedWhileAReplayRuns() {
        ScriptedAgent agent(wellBehaved());
        agent.busy = true;
        agent.replyDelayMs = 800;
        AgentClient client(optionsFor(agent));
        std::atomic<int> reports{0};
        std::atomic<bool> sawBusy{false};
        const auto r = waitFor(client.replay(request(), {}, [&](const RequestProgress& p) {
            ++reports;
            sawBusy = sawBusy || p.agentBusy;
        }));
        QVERIFY(r.ok());
        QVERIFY2(reports >= 2, std::to_string(reports).c_str());
        QVERIFY(sawBusy);
    }

    void cancellationEndsAWaitAtOnce() {
        ScriptedAgent agent([](const json&) { return std::vector<ScriptedAgent::Frames>{}; });
        AgentClient client(optionsFor(agent));
        CancelToken cancel;
        auto f = client.replay(request(), cancel);
        std::this_thread::sleep_for(100ms);
        const auto t0 = std::chrono::steady_clock::now();
        cancel.cancel();
        expectError(waitFor(std::move(f)), ErrorCode::Cancelled, "cancelled");
        QVERIFY(std::chrono::steady_clock::now() - t0 < 1s);
    }

    void agentVanishingMidRequestIsReported() {
        ScriptedAgent agent(wellBehaved());
        agent.vanishOnReplay = true;
        auto o = optionsFor(agent);
        o.requestTimeout = 60s;
        o.livenessTimeout = 30s; // the dropped connection itself must end the wait
        AgentClient client(o);
        QVERIFY(waitFor(client.hello()).ok());
        const auto t0 = std::chrono::steady_clock::now();
        expectError(waitFor(client.replay(request())), ErrorCode::Unreachable, "dropped");
        QVERIFY(std::chrono::steady_clock::now() - t0 < 10s);
    }

    void agentGoingSilentIsReported() {
        ScriptedAgent agent([](const json&) { return std::vector<ScriptedAgent::Frames>{}; });
        agent.answerPings = false; // hung, but the connection stays up
        auto o = optionsFor(agent);
        o.requestTimeout = 60s;
        o.livenessTimeout = 500ms;
        AgentClient client(o);
        const auto t0 = std::chrono::steady_clock::now();
        expectError(waitFor(client.replay(request())), ErrorCode::Unreachable, "stopped answering");
        QVERIFY(std::chrono::steady_clock::now() - t0 < 5s);
        QVERIFY(agent.pings > 0);
    }

    void nobodyListeningIsReported() {
        int port = 0;
        {
            ScriptedAgent gone(wellBehaved());
            port = std::stoi(gone.endpoint().substr(gone.endpoint().rfind(':') + 1));
        }
        ClientOptions o;
        o.endpoint = "tcp://127.0.0.1:" + std::to_string(port);
        o.token = kToken;
        o.handshakeTimeout = 400ms;
        AgentClient client(o);
        expectError(waitFor(client.hello()), ErrorCode::Timeout, "hello");
    }

    void oversizedRepliesAreRefused() {
        ScriptedAgent agent([](const json& r) -> std::vector<ScriptedAgent::Frames> {
            if (r.at("module") == "header") {
                return {ScriptedAgent::reply(r, {{"pad", std::string(4096, 'x')}})};
            }
            if (r.at("module") == "total") {
                auto frames =
                    ScriptedAgent::reply(r, {{"seconds", 0.0}, {"tensors", json::array()}});
                frames.emplace_back(40 * 1024, 'x');
                frames.emplace_back(40 * 1024, 'y');
                return {frames};
            }
            auto frames = ScriptedAgent::reply(r, {{"seconds", 0.0}, {"tensors", json::array()}});
            frames.emplace_back(256 * 1024, 'z'); // one frame over the whole limit
            return {frames};
        });
        auto o = optionsFor(agent);
        o.maxHeaderBytes = 1024;
        o.maxReplyBytes = 64 * 1024;
        AgentClient client(o);
        expectError(waitFor(client.replay(request("header"))), ErrorCode::ReplyTooLarge, "header");
        expectError(waitFor(client.replay(request("total"))), ErrorCode::ReplyTooLarge,
                    "limit is 65536");
        // ZeroMQ drops the connection before reading a frame over the limit.
        expectError(waitFor(client.replay(request("frame"))), ErrorCode::Unreachable, "limit");
        // It reconnects: the next reply is read (and refused for its size) again.
        expectError(waitFor(client.replay(request("total"))), ErrorCode::ReplyTooLarge,
                    "limit is 65536");
    }

    void truncatedAndGarbageRepliesAreErrors() {
        ScriptedAgent agent([](const json& r) -> std::vector<ScriptedAgent::Frames> {
            const std::string m = r.at("module");
            if (m == "truncated") {
                auto frames = replayFrames(r);
                frames.pop_back();
                return {frames};
            }
            if (m == "garbage") {
                return {{std::string("\x00\x01garbage", 9)}};
            }
            if (m == "no-id") {
                return {{json{{"protocol", 2},
                              {"id", nullptr},
                              {"status", "error"},
                              {"error", {{"code", "malformed"}, {"message", "not JSON"}}}}
                             .dump()}};
            }
            return {replayFrames(r)};
        });
        AgentClient client(optionsFor(agent));
        expectError(waitFor(client.replay(request("truncated"))), ErrorCode::BadReply,
                    "payload frames");
        expectError(waitFor(client.replay(request("garbage"))), ErrorCode::BadReply, "JSON");
        expectError(waitFor(client.replay(request("no-id"))), ErrorCode::Malformed, "not JSON");
        QVERIFY(waitFor(client.replay(request("fine"))).ok());
    }

    void closingTheClientCompletesPendingRequests() {
        ScriptedAgent agent([](const json&) { return std::vector<ScriptedAgent::Frames>{}; });
        std::future<Result<ReplayReply>> f;
        {
            AgentClient client(optionsFor(agent));
            f = client.replay(request());
            std::this_thread::sleep_for(50ms);
        }
        expectError(waitFor(std::move(f)), ErrorCode::Closed);
    }

    void endpointsAndTokenFiles() {
        QCOMPARE(endpointFromHostPort("127.0.0.1:5555").value(),
                 std::string("tcp://127.0.0.1:5555"));
        QCOMPARE(endpointFromHostPort("[::1]:80").value(), std::string("tcp://[::1]:80"));
        for (const char* bad : {"host", ":5", "h:0", "h:70000", "h:5x", "a/b:5", "h;rm:5"}) {
            QVERIFY2(!endpointFromHostPort(bad).ok(), bad);
        }
        ClientOptions o;
        o.endpoint = "nonsense://x";
        o.token = kToken;
        AgentClient broken(o);
        expectError(waitFor(broken.hello()), ErrorCode::BadEndpoint, "nonsense");

        QTemporaryDir dir;
        const auto write = [&](const char* name, const std::string& text) {
            const auto path = dir.filePath(name).toStdString();
            std::ofstream(path) << text;
            return path;
        };
        QCOMPARE(readTokenFile(write("good", kToken + "\n")).value(), kToken);
        expectError(readTokenFile(write("short", "abcd\n")), ErrorCode::TokenFile, "64 hex digits");
        expectError(readTokenFile(write("nothex", std::string(64, 'g'))), ErrorCode::TokenFile,
                    "hex");
        expectError(readTokenFile(write("big", std::string(5000, 'a'))), ErrorCode::TokenFile,
                    "larger");
        expectError(readTokenFile(dir.filePath("absent").toStdString()), ErrorCode::TokenFile,
                    "cannot be read");
    }
};

QTEST_GUILESS_MAIN(TestAgentClient)
#include "test_agent_client.moc"
