// Judging replays on synthetic shards: the replayed tensor is merged from per-rank shards
// (copy and partial sums), compared with the reference, and held to the floor measured from
// the replays of the reference's perturbed inputs through the empirical rule.
#include "ttrace/compare/verdict.h"
#include "ttrace/replay/agent_judge.h"
#include "ttrace/replay/localize_report.h"
#include "ttrace/replay/replay_judge.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <cstring>

using namespace ttrace;
using namespace ttrace::replay;

namespace {

constexpr std::int64_t kRows = 8, kCols = 16;
const TensorId kId{"nominal", 0, 0, "layers.0.mlp", TensorKind::ForwardOutput, "0"};

std::vector<double> baseValues() {
    std::vector<double> v(kRows * kCols);
    for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = std::sin(0.37 * static_cast<double>(i)) + 0.1;
    }
    return v;
}

// values * (1 + scale * deterministic noise of `seed`), rounded to float32 like a real replay.
std::vector<float> jittered(const std::vector<double>& values, double scale, int seed) {
    std::vector<float> out(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double noise =
            std::sin(static_cast<double>(i * 7 + static_cast<std::size_t>(seed) * 131));
        out[i] = static_cast<float>(values[i] * (1.0 + scale * noise));
    }
    return out;
}

FullTensor fullTensor(const std::vector<double>& values) {
    FullTensor t;
    t.id = kId;
    t.shape = {kRows, kCols};
    for (const double v : values) {
        t.values.push_back(static_cast<double>(static_cast<float>(v)));
    }
    return t;
}

Placement rows(std::int64_t start, std::int64_t n, Combine combine = Combine::Copy,
               std::int64_t partial = 0) {
    Placement p;
    p.globalShape = {kRows, kCols};
    p.combine = combine;
    p.partialIndex = partial;
    p.boxes = {Box{{{0, start, n}, {0, 0, kCols}}}};
    return p;
}

ReplayShard shard(const std::string& variant, int rank, Placement p, Shape local,
                  const float* data) {
    ReplayShard s;
    s.id = kId.withVariant(variant);
    s.shard.rank = rank;
    s.shard.dtype = DType::Float32;
    s.shard.localShape = std::move(local);
    s.shard.placement = std::move(p);
    const auto n = static_cast<std::size_t>(elementCount(s.shard.localShape));
    s.shard.raw.resize(n * sizeof(float));
    std::memcpy(s.shard.raw.data(), data, s.shard.raw.size());
    return s;
}

// A tensor split by rows over two ranks (tensor parallel), for one variant.
void addRowSplit(ReplayReply& reply, const std::string& variant, const std::vector<float>& v) {
    const std::int64_t half = kRows / 2;
    reply.shards.push_back(shard(variant, 0, rows(0, half), {half, kCols}, v.data()));
    reply.shards.push_back(
        shard(variant, 1, rows(half, half), {half, kCols}, v.data() + half * kCols));
}

ReferenceLookup lookupOf(const FullTensor& reference) {
    return [reference](const TensorId& id) {
        MergeResult r;
        if (id == kId) {
            r.tensor = reference;
        }
        return r;
    };
}

const JudgeSettings kFp32{ToleranceSettings{}, "fp32"};

std::int64_t histogramTotal(const ErrorHistogram& h) {
    std::int64_t n = h.exactZero + h.nonFinite;
    for (const auto c : h.counts) {
        n += c;
    }
    return n;
}

// Elements in bins that start at or beyond one tolerance unit (the bins' spacing is the
// histogram's business: this reads only the edges).
std::int64_t beyondOneUnit(const ErrorHistogram& h) {
    std::int64_t n = h.nonFinite;
    for (std::size_t i = 0; i < h.counts.size() && i < h.edges.size(); ++i) {
        n += h.edges[i] >= 1.0 ? h.counts[i] : 0;
    }
    return n;
}

// The bin whose [edges[i], edges[i+1]) holds x tolerance units.
std::size_t binOf(const ErrorHistogram& h, double x) {
    std::size_t i = 0;
    while (i + 1 < h.counts.size() && i + 1 < h.edges.size() && x >= h.edges[i + 1]) {
        ++i;
    }
    return i;
}

} // namespace

class TestReplayJudge : public QObject {
    Q_OBJECT
private slots:
    void roundOffOnlyIsInherited() {
        const auto base = baseValues();
        ReplayReply reply;
        addRowSplit(reply, "nominal", jittered(base, 1e-7, 1));
        addRowSplit(reply, "perturbed-1", jittered(base, 3e-6, 2));
        addRowSplit(reply, "perturbed-2", jittered(base, 3e-6, 3));
        const auto j = judgeReplay(reply, lookupOf(fullTensor(base)), kFp32);
        QCOMPARE(j.tensors.size(), std::size_t{1});
        const auto& t = j.tensors.front();
        QCOMPARE(t.floorSamples.size(), std::size_t{2});
        QCOMPARE(t.tolerance.source, std::string("empirical"));
        // The tolerance is exactly the empirical rule over the measured samples.
        const double expected =
            empiricalTolerance(0.0, noiseFloor(t.floorSamples), machineEpsilon(DType::Float32));
        QCOMPARE(t.tolerance.value, expected);
        QVERIFY(t.floorSamples[0] > 1e-6 && t.floorSamples[0] < 1e-5);
        QVERIFY2(t.ratio < 1.0, std::to_string(t.ratio).c_str());
        QVERIFY(!j.divergent && j.judgeable);
        std::string reason;
        QCOMPARE(AgentJudge::verdictOf(j, reason), Verdict::Inherited);
    }

    void aBugGivenCorrectInputsIsIntroduced() {
        const auto base = baseValues();
        auto buggy = jittered(base, 1e-7, 1);
        buggy[5 * kCols + 3] = 0.0f; // one element lost (e.g. an off-by-one mask)
        ReplayReply reply;
        addRowSplit(reply, "nominal", buggy);
        addRowSplit(reply, "perturbed-1", jittered(base, 3e-6, 2));
        addRowSplit(reply, "perturbed-2", jittered(base, 3e-6, 3));
        // The floor is measured against the replayed nominal; the perturbed replays share the
        // bug in a real job, so put it in them too.
        for (auto& s : reply.shards) {
            if (s.id.variant != "nominal" && s.shard.rank == 1) {
                float zero = 0.0f;
                std::memcpy(s.shard.raw.data() + (1 * kCols + 3) * sizeof(float), &zero,
                            sizeof zero);
            }
        }
        const auto j = judgeReplay(reply, lookupOf(fullTensor(base)), kFp32);
        QVERIFY(j.divergent);
        QVERIFY(j.maxRatio > 100.0);
        std::string reason;
        QCOMPARE(AgentJudge::verdictOf(j, reason), Verdict::Introduced);
    }

    void errorJustAboveTheFloorIsIntroduced() {
        // The threshold is safety x (mean + 2 spread): an error 10x the floor mean with a tiny
        // spread is a bug, one at the floor is not.
        const auto base = baseValues();
        const auto reference = fullTensor(base);
        std::map<std::string, FullTensor> replayed;
        const auto off = jittered(base, 4e-5, 1);
        replayed["nominal"] = fullTensor(std::vector<double>(off.begin(), off.end()));
        replayed["perturbed-1"] = replayed["nominal"];
        replayed["perturbed-2"] = replayed["nominal"];
        for (std::size_t i = 0; i < base.size(); ++i) {
            replayed["perturbed-1"].values[i] *= 1.0 + 2e-6;
            replayed["perturbed-2"].values[i] *= 1.0 + 2.2e-6;
        }
        const auto j = judgeTensor(kId, reference, replayed, kFp32);
        QCOMPARE(j.status, Status::Divergent);
        QVERIFY(j.ratio > 1.0 && j.ratio < 100.0);
    }

    void partialSumsAreMergedBeforeJudging() {
        const auto base = baseValues();
        std::vector<float> half1(base.size()), half2(base.size());
        for (std::size_t i = 0; i < base.size(); ++i) {
            half1[i] = static_cast<float>(base[i] * 0.25);
            half2[i] = static_cast<float>(base[i] * 0.75);
        }
        ReplayReply reply;
        reply.shards.push_back(
            shard("nominal", 0, rows(0, kRows, Combine::Sum, 0), {kRows, kCols}, half1.data()));
        reply.shards.push_back(
            shard("nominal", 1, rows(0, kRows, Combine::Sum, 1), {kRows, kCols}, half2.data()));
        const auto j = judgeReplay(reply, lookupOf(fullTensor(base)), kFp32);
        QCOMPARE(j.tensors.size(), std::size_t{1});
        // No perturbed replays: the analytic bound of one layer stands in.
        const double eps = machineEpsilon(DType::Float32);
        QCOMPARE(j.tensors[0].tolerance.source, std::string("analytic"));
        QCOMPARE(j.tensors[0].tolerance.value, analyticTolerance(4.0, 1.03, 1, eps));
        QVERIFY2(j.tensors[0].ratio <= 1.0, std::to_string(j.tensors[0].ratio).c_str());
    }

    void holesAndMissingReferencesAreNotJudged() {
        const auto base = baseValues();
        const auto v = jittered(base, 0.0, 1);
        ReplayReply hole;
        hole.shards.push_back(
            shard("nominal", 0, rows(0, kRows / 2), {kRows / 2, kCols}, v.data()));
        auto j = judgeReplay(hole, lookupOf(fullTensor(base)), kFp32);
        QVERIFY(!j.judgeable);
        std::string reason;
        QCOMPARE(AgentJudge::verdictOf(j, reason), Verdict::NotReplayable);
        QVERIFY(!reason.empty());

        ReplayReply other;
        addRowSplit(other, "nominal", v);
        for (auto& s : other.shards) {
            s.id.module = "layers.9"; // the reference has no such tensor
        }
        j = judgeReplay(other, lookupOf(fullTensor(base)), kFp32);
        QVERIFY(!j.judgeable);
        QCOMPARE(j.tensors.front().status, Status::Missing);

        j = judgeReplay(ReplayReply{}, lookupOf(fullTensor(base)), kFp32);
        QVERIFY(!j.judgeable);
    }

    void theReplayedErrorIsHistogrammedInReplayToleranceUnits() {
        // One element lost given the reference's inputs: the replay's histogram puts exactly
        // that element beyond the replay tolerance, in the bin of its own error, and every other
        // element (float32 round-off) far below it.
        const auto base = baseValues();
        const auto reference = fullTensor(base);
        auto buggy = jittered(base, 1e-7, 1);
        constexpr std::size_t kLost = 5 * kCols + 3;
        buggy[kLost] = 0.0f;
        std::map<std::string, FullTensor> replayed;
        replayed["nominal"] = fullTensor(std::vector<double>(buggy.begin(), buggy.end()));
        for (const int k : {2, 3}) {
            auto p = jittered(base, 3e-6, k);
            p[kLost] = 0.0f;
            replayed["perturbed-" + std::to_string(k)] =
                fullTensor(std::vector<double>(p.begin(), p.end()));
        }
        const auto j = judgeTensor(kId, reference, replayed, kFp32);
        QCOMPARE(j.status, Status::Divergent);
        const auto& h = j.histogram;
        QVERIFY(!h.counts.empty() && h.edges.size() == h.counts.size() + 1);
        QCOMPARE(histogramTotal(h), kRows * kCols);
        QCOMPARE(beyondOneUnit(h), std::int64_t{1});
        double sumSq = 0.0;
        for (const double v : reference.values) {
            sumSq += v * v;
        }
        const double unit = j.tolerance.value * std::sqrt(sumSq / double(reference.values.size()));
        const double lostUnits = std::abs(reference.values[kLost]) / unit;
        QVERIFY2(lostUnits > 10.0, std::to_string(lostUnits).c_str());
        QCOMPARE(h.counts[binOf(h, lostUnits)], std::int64_t{1});

        // The same replay without the bug: nothing reaches the replay tolerance.
        replayed["nominal"] = fullTensor(base);
        replayed["nominal"].values[7] += 1e-9; // not all exact
        const auto clean = judgeTensor(kId, reference, replayed, kFp32);
        QCOMPARE(clean.status, Status::Clean);
        QCOMPARE(histogramTotal(clean.histogram), kRows * kCols);
        QCOMPARE(beyondOneUnit(clean.histogram), std::int64_t{0});
        QCOMPARE(clean.histogram.exactZero, kRows * kCols - 1);

        // The localize JSON carries it with the diff report's field names.
        LocalizeResult r;
        ModuleVerdict v;
        v.suspect.module = kId.module;
        v.judgement.tensors.push_back(j);
        r.verdicts.push_back(v);
        const auto doc = QJsonDocument::fromJson(
            QByteArray::fromStdString(localizeResultToJson(r, LocalizeContext{})));
        const auto json = doc.object()["verdicts"]
                              .toArray()[0]
                              .toObject()["tensors"]
                              .toArray()[0]
                              .toObject()["histogram"]
                              .toObject();
        QCOMPARE(json["counts"].toArray().size(), qsizetype(h.counts.size()));
        QCOMPARE(json["edges"].toArray().size(), qsizetype(h.edges.size()));
        QCOMPARE(json["counts"].toArray()[qsizetype(binOf(h, lostUnits))].toInteger(), 1);
        QCOMPARE(json["exact_zero"].toInteger(), h.exactZero);
        QCOMPARE(json["non_finite"].toInteger(), 0);
    }

    void shapeMismatchIsInvalid() {
        const auto base = baseValues();
        std::map<std::string, FullTensor> replayed{{"nominal", fullTensor(base)}};
        replayed["nominal"].shape = {kCols, kRows};
        const auto j = judgeTensor(kId, fullTensor(base), replayed, kFp32);
        QCOMPARE(j.status, Status::Invalid);
    }
};

QTEST_GUILESS_MAIN(TestReplayJudge)
#include "test_replay_judge.moc"
