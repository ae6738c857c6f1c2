// Validation of agent replies: a well-formed reply parses to shards mergeShards accepts; every
// hostile variation (wrong types, sizes that disagree, frames missing or reused, boxes outside
// the tensor, overflowing shapes, deep nesting, garbage) is a BadReply naming the problem.
#include "replay/reply_builder.h"
#include "ttrace/replay/localize_text.h"
#include "ttrace/replay/relaunch_layout_text.h"
#include "ttrace/replay/reply_parser.h"

#include <QtTest>

#include <functional>
#include <limits>

using namespace ttrace;
using namespace ttrace::replay;
using namespace ttrace::replay::test;

namespace {

struct Reply {
    json header;
    std::vector<std::vector<std::byte>> payloads;
};

// Two row shards of a [2, 3] tensor from ranks 0 and 1.
Reply goodReply() {
    Reply r;
    r.header =
        replayHeader(7, json::array({rowShardEntry("nominal", "layers.0", 0, 0, 1, 2, 3, 1),
                                     rowShardEntry("nominal", "layers.0", 1, 1, 1, 2, 3, 2)}));
    r.payloads = {floatBytes({1, 2, 3}), floatBytes({4, 5, 6})};
    return r;
}

Result<ReplayReply> parseReplay(const std::string& text,
                                const std::vector<std::vector<std::byte>>& payloads) {
    auto header = ReplyHeader::parse(text);
    if (!header) {
        return header.error();
    }
    std::vector<std::span<const std::byte>> spans(payloads.begin(), payloads.end());
    return header->replay(spans);
}

using Mutation = std::function<void(Reply&)>;

} // namespace

Q_DECLARE_METATYPE(Mutation)

class TestReplayReply : public QObject {
    Q_OBJECT
private slots:
    void wellFormedReplyMerges() {
        const auto r = goodReply();
        const auto reply = parseReplay(r.header.dump(), r.payloads);
        QVERIFY2(reply.ok(), reply.ok() ? "" : reply.error().message.c_str());
        QCOMPARE(reply->seconds, 0.25);
        QCOMPARE(reply->shards.size(), std::size_t{2});
        QCOMPARE(reply->shards[1].shard.rank, 1);
        QCOMPARE(reply->shards[0].id.module, std::string("layers.0"));
        std::vector<RawShard> shards;
        for (const auto& s : reply->shards) {
            shards.push_back(s.shard);
        }
        const auto merged = mergeShards(reply->shards[0].id, shards);
        QVERIFY(merged.tensor && merged.findings.empty());
        QCOMPARE(merged.tensor->values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
    }

    void hostileRepliesAreRejected_data() {
        QTest::addColumn<Mutation>("mutate");
        QTest::addColumn<QString>("expected"); // a piece of the message naming the problem
        auto entry = [](Reply& r) -> json& { return r.header["tensors"][0]; };
        QTest::newRow("bytes disagree with shape")
            << Mutation([=](Reply& r) { entry(r)["bytes"] = 8; }) << "needs 12 bytes";
        QTest::newRow("payload shorter than shape")
            << Mutation([](Reply& r) { r.payloads[0].resize(8); }) << "holds 8";
        QTest::newRow("payload longer than shape")
            << Mutation([](Reply& r) { r.payloads[0].resize(16); }) << "holds 16";
        QTest::newRow("missing payload frame")
            << Mutation([](Reply& r) { r.payloads.pop_back(); }) << "carries 1 payload frames";
        QTest::newRow("extra payload frame")
            << Mutation([](Reply& r) { r.payloads.push_back(floatBytes({1})); })
            << "carries 3 payload";
        QTest::newRow("frame reused")
            << Mutation([=](Reply& r) { r.header["tensors"][1]["frame"] = 1; })
            << "unused payload frame";
        QTest::newRow("frame zero")
            << Mutation([=](Reply& r) { entry(r)["frame"] = 0; }) << "frame 0";
        QTest::newRow("frame past the end")
            << Mutation([=](Reply& r) { entry(r)["frame"] = 9; }) << "frame 9";
        QTest::newRow("box outside global shape") << Mutation([=](Reply& r) {
            entry(r)["boxes"] = json::array({json::array({0, 2, 1, 0, 0, 3})});
        }) << "outside";
        QTest::newRow("box outside local shape") << Mutation([=](Reply& r) {
            entry(r)["boxes"] = json::array({json::array({1, 0, 1, 0, 0, 3})});
        }) << "outside";
        QTest::newRow("negative box start") << Mutation([=](Reply& r) {
            entry(r)["boxes"] = json::array({json::array({0, -1, 1, 0, 0, 3})});
        }) << "negative";
        QTest::newRow("box near int64 max") << Mutation([=](Reply& r) {
            const auto big = std::numeric_limits<std::int64_t>::max() - 1;
            entry(r)["boxes"] = json::array({json::array({0, big, 2, 0, 0, 3})});
        }) << "implausibly large";
        QTest::newRow("box row too short") << Mutation([=](Reply& r) {
            entry(r)["boxes"] = json::array({json::array({0, 0, 1})});
        }) << "rows of 6 integers";
        QTest::newRow("shape overflows int64 bytes") << Mutation([=](Reply& r) {
            entry(r)["shape"] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
        }) << "implausibly large";
        QTest::newRow("global shape overflows") << Mutation([=](Reply& r) {
            entry(r)["global_shape"] = {std::int64_t{1} << 62, 8};
        }) << "implausibly large";
        QTest::newRow("negative shape") << Mutation([=](Reply& r) {
            entry(r)["shape"] = {-1, 3};
        }) << "non-negative";
        QTest::newRow("shape of strings") << Mutation([=](Reply& r) {
            entry(r)["shape"] = {"1", "3"};
        }) << "list of integers";
        QTest::newRow("unsigned beyond int64") << Mutation([=](Reply& r) {
            entry(r)["bytes"] = std::numeric_limits<std::uint64_t>::max();
        }) << "out of range";
        QTest::newRow("unknown dtype")
            << Mutation([=](Reply& r) { entry(r)["dtype"] = "float128"; }) << "unknown dtype";
        QTest::newRow("unknown kind")
            << Mutation([=](Reply& r) { entry(r)["kind"] = "activation"; })
            << "unknown tensor kind";
        QTest::newRow("unknown combine")
            << Mutation([=](Reply& r) { entry(r)["combine"] = "mean"; }) << "unknown combine";
        QTest::newRow("unknown placement")
            << Mutation([=](Reply& r) { entry(r)["placement"] = "tiles"; }) << "unknown placement";
        QTest::newRow("rank negative")
            << Mutation([=](Reply& r) { entry(r)["rank"] = -3; }) << "out of range";
        QTest::newRow("module not a string")
            << Mutation([=](Reply& r) { entry(r)["module"] = 5; }) << "'module' must be a string";
        QTest::newRow("entry not an object")
            << Mutation([](Reply& r) { r.header["tensors"][0] = 3; }) << "not an object";
        QTest::newRow("tensors not a list")
            << Mutation([](Reply& r) { r.header["tensors"] = "x"; }) << "'tensors' must be a list";
        QTest::newRow("seconds missing")
            << Mutation([](Reply& r) { r.header.erase("seconds"); }) << "'seconds' is missing";
        QTest::newRow("flat ranges bad rows") << Mutation([=](Reply& r) {
            entry(r)["placement"] = "flat";
            entry(r)["flat_ranges"] = json::array({json::array({0, 0})});
        }) << "rows of 3";
        QTest::newRow("flat range outside") << Mutation([=](Reply& r) {
            entry(r)["placement"] = "flat";
            entry(r)["flat_ranges"] = json::array({json::array({0, 5, 3})});
        }) << "outside";
    }
    void hostileRepliesAreRejected() {
        QFETCH(Mutation, mutate);
        QFETCH(QString, expected);
        auto r = goodReply();
        mutate(r);
        const auto reply = parseReplay(r.header.dump(), r.payloads);
        QVERIFY(!reply.ok());
        QCOMPARE(reply.error().code, ErrorCode::BadReply);
        QVERIFY2(reply.error().message.find(expected.toStdString()) != std::string::npos,
                 reply.error().message.c_str());
    }

    void garbageHeadersAreRejected_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::newRow("empty") << QByteArray();
        QTest::newRow("not json") << QByteArray("hello agent");
        QTest::newRow("truncated json") << QByteArray("{\"protocol\": 2, \"id\": 3, \"stat");
        QTest::newRow("array") << QByteArray("[1,2,3]");
        QTest::newRow("invalid utf8")
            << QByteArray("{\"protocol\":2,\"id\":1,\"status\":\"\xff\xfe\"}");
        QTest::newRow("deep nesting") << QByteArray(100000, '[');
        QTest::newRow("deep objects")
            << (QByteArray("{\"a\":").repeated(5000) + "1" + QByteArray("}").repeated(5000));
        QTest::newRow("status unknown")
            << QByteArray("{\"protocol\":2,\"id\":1,\"status\":\"maybe\"}");
        QTest::newRow("id a string")
            << QByteArray("{\"protocol\":2,\"id\":\"1\",\"status\":\"ok\"}");
        QTest::newRow("protocol missing") << QByteArray("{\"id\":1,\"status\":\"ok\"}");
        QTest::newRow("error without object")
            << QByteArray("{\"protocol\":2,\"id\":1,\"status\":\"error\"}");
    }
    void garbageHeadersAreRejected() {
        QFETCH(QByteArray, text);
        auto header = ReplyHeader::parse(
            std::string_view(text.constData(), static_cast<std::size_t>(text.size())));
        if (header.ok()) {
            // Parsable envelopes that carry no usable error must still not be a success.
            QVERIFY(header->envelope().error.has_value());
            QCOMPARE(header->envelope().error->code, ErrorCode::BadReply);
            return;
        }
        QCOMPARE(header.error().code, ErrorCode::BadReply);
        QVERIFY(!header.error().message.empty());
    }

    void agentErrorsKeepTheirCode() {
        const auto header = ReplyHeader::parse(
            "{\"protocol\":2,\"id\":4,\"status\":\"error\",\"error\":{\"code\":\"not_replayable\","
            "\"message\":\"stochastic: draws random numbers\"}}");
        QVERIFY(header.ok());
        QCOMPARE(*header->envelope().id, std::int64_t{4});
        QCOMPARE(header->envelope().error->code, ErrorCode::NotReplayable);
        QCOMPARE(header->envelope().error->message,
                 std::string("stochastic: draws random numbers"));
        const auto unknown =
            ReplyHeader::parse("{\"protocol\":2,\"id\":4,\"status\":\"error\",\"error\":{\"code\":"
                               "\"timeout\",\"message\":\"x\"}}");
        // A client-side code name coming from the network is not taken at its word.
        QCOMPARE(unknown->envelope().error->code, ErrorCode::UnknownAgentError);
        const auto busy = ReplyHeader::parse("{\"protocol\":2,\"id\":5,\"status\":\"busy\"}");
        QCOMPARE(busy->envelope().error->code, ErrorCode::Busy);
    }

    void versionMismatchIsTyped() {
        const auto header = ReplyHeader::parse("{\"protocol\":3,\"id\":1,\"status\":\"ok\"}");
        QVERIFY(!header.ok());
        QCOMPARE(header.error().code, ErrorCode::Version);
        // An agent of protocol 1 (no replays of hand-off, call or recompute rows) is refused too.
        const auto older = ReplyHeader::parse("{\"protocol\":1,\"id\":1,\"status\":\"ok\"}");
        QVERIFY(!older.ok());
        QCOMPARE(older.error().code, ErrorCode::Version);
    }

    void refusalReasonsAreTypedAndWordedOnce() {
        const auto header = ReplyHeader::parse(
            "{\"protocol\":2,\"id\":4,\"status\":\"error\",\"error\":{\"code\":\"not_replayable\","
            "\"reason\":\"recompute_stochastic\",\"message\":\"rank 0: stochastic\"}}");
        QVERIFY(header.ok());
        const auto& error = *header->envelope().error;
        QCOMPARE(error.refusal, Refusal::RecomputeStochastic);
        QCOMPARE(refusalReason(error),
                 "not_replayable: " + std::string(refusalText(Refusal::RecomputeStochastic)) +
                     " (rank 0: stochastic)");
        QCOMPARE(refusalOf("handoff_unrecorded"), Refusal::HandoffUnrecorded);
        QCOMPARE(refusalOf("partial_integer_input"), Refusal::PartialIntegerInput);
        QCOMPARE(refusalOf(""), Refusal::None);
        QCOMPARE(refusalOf("from_a_newer_agent"), Refusal::Unknown);
        // Without a typed reason the agent's message stands alone, as before.
        const Error plain{ErrorCode::NotReplayable, "inputs not captured"};
        QCOMPARE(refusalReason(plain), std::string("not_replayable: inputs not captured"));
        for (const auto r :
             {Refusal::Stochastic, Refusal::RecomputeStochastic, Refusal::RecomputeGradients,
              Refusal::CallNotRecorded, Refusal::HandoffUnrecorded, Refusal::Unknown}) {
            QVERIFY(!refusalText(r).empty());
        }
    }

    void helloParsesModules() {
        const auto header = ReplyHeader::parse(helloHeader(1).dump());
        QVERIFY(header.ok());
        const auto info = header->hello();
        QVERIFY2(info.ok(), info.ok() ? "" : info.error().message.c_str());
        QCOMPARE(info->worldSize, 4);
        QCOMPARE(info->parallel.at("tp"), 2);
        QCOMPARE(info->modules.size(), std::size_t{2});
        QVERIFY(!info->findModule("layers.0.drop")->replayable);
        auto broken = helloHeader(1);
        broken["modules"][1]["replayable"] = "no";
        QVERIFY(!ReplyHeader::parse(broken.dump())->hello().ok());
        broken = helloHeader(1);
        broken["world_size"] = 0;
        QVERIFY(!ReplyHeader::parse(broken.dump())->hello().ok());
    }

    // A relaunch smaller than the job says both layouts; clients word them the same.
    void helloParsesTheRelaunchLayout() {
        auto hello = helloHeader(1);
        hello["world_size"] = 2;
        hello["relaunch"] = {
            {"code_changes", json::array()},
            {"layout",
             {{"captured", {{"world_size", 4}, {"parallel", {{"tp", 2}, {"pp", 1}, {"dp", 2}}}}},
              {"relaunched", {{"world_size", 2}, {"parallel", {{"tp", 2}, {"pp", 1}, {"dp", 1}}}}},
              {"ranks_per_rank", 2}}}};
        const auto info = ReplyHeader::parse(hello.dump())->hello();
        QVERIFY2(info.ok(), info.ok() ? "" : info.error().message.c_str());
        QCOMPARE(info->capturedLayout.worldSize, 4);
        QCOMPARE(info->relaunchedLayout.parallel.at("dp"), 1);
        QVERIFY(relaunchIsSmaller(info.value()));
        QCOMPARE(relaunchLayoutLine(info.value()),
                 std::string("relaunched TP2, 2 ranks, of the captured TP2 x DP2, 4 ranks: each "
                             "rank replays 2 captured ranks in turn; replays that need the "
                             "data-parallel group are refused"));
        auto same = hello;
        same["relaunch"]["layout"]["relaunched"] = same["relaunch"]["layout"]["captured"];
        const auto full = ReplyHeader::parse(same.dump())->hello();
        QCOMPARE(relaunchLayoutLine(full.value()), std::string("TP2 x DP2, 4 ranks, as captured"));
        auto broken = hello;
        broken["relaunch"]["layout"]["relaunched"]["parallel"]["dp"] = "one";
        QVERIFY(!ReplyHeader::parse(broken.dump())->hello().ok());
        broken = hello;
        broken["relaunch"]["layout"]["ranks_per_rank"] = 2.5;
        QVERIFY(!ReplyHeader::parse(broken.dump())->hello().ok());
        // A live job's agent says nothing of a relaunch: nothing is shown.
        const auto live = ReplyHeader::parse(helloHeader(1).dump())->hello();
        QCOMPARE(relaunchLayoutLine(live.value()), std::string());
    }

    void layoutTooSmallIsTyped() {
        const auto header =
            ReplyHeader::parse("{\"protocol\":2,\"id\":4,\"status\":\"error\",\"error\":{"
                               "\"code\":\"layout_too_small\",\"message\":\"needs dp\"}}");
        QCOMPARE(header->envelope().error->code, ErrorCode::LayoutTooSmall);
        QCOMPARE(errorCodeName(ErrorCode::LayoutTooSmall), std::string_view("layout_too_small"));
    }

    void scalarsAndFlatRangesParse() {
        Reply r;
        json scalar = rowShardEntry("nominal", "loss", 0, 0, 1, 1, 1, 1);
        scalar["shape"] = {1};
        scalar["global_shape"] = {1};
        scalar["boxes"] = json::array({json::array({0, 0, 1})});
        scalar["is_scalar"] = true;
        scalar["bytes"] = 4;
        json flat = rowShardEntry("nominal", "layers.0", 1, 0, 1, 2, 3, 2, "optimizer_state");
        flat["placement"] = "flat";
        flat.erase("boxes");
        flat["shape"] = {3};
        flat["flat_ranges"] = json::array({json::array({0, 3, 3})});
        r.header = replayHeader(1, json::array({scalar, flat}));
        r.payloads = {floatBytes({2.5f}), floatBytes({4, 5, 6})};
        const auto reply = parseReplay(r.header.dump(), r.payloads);
        QVERIFY2(reply.ok(), reply.ok() ? "" : reply.error().message.c_str());
        QVERIFY(reply->shards[0].shard.placement.isScalar);
        QCOMPARE(reply->shards[1].shard.placement.kind, PlacementKind::Flat);
    }
};

QTEST_GUILESS_MAIN(TestReplayReply)
#include "test_replay_reply.moc"
