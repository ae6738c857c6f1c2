// Shard merging on in-memory shards: every combine mode and every coverage finding.
#include "ttrace/merge/merge.h"

#include <QtTest>

#include <cstring>

using namespace ttrace;

namespace {

RawShard f32Shard(int rank, Shape local, Placement p, const std::vector<float>& values) {
    RawShard s{rank, DType::Float32, std::move(local), std::move(p), {}};
    s.raw.resize(values.size() * sizeof(float));
    std::memcpy(s.raw.data(), values.data(), s.raw.size());
    return s;
}

Placement rowsOf(std::int64_t start, std::int64_t n, Shape global, Combine c = Combine::Copy,
                 std::int64_t partial = 0) {
    Placement p;
    p.globalShape = global;
    p.combine = c;
    p.partialIndex = partial;
    p.boxes = {Box{{{0, start, n}, {0, 0, global[1]}}}};
    return p;
}

bool hasFinding(const MergeResult& r, const std::string& code, const std::string& text) {
    for (const auto& f : r.findings) {
        if (f.code == code && f.message.find(text) != std::string::npos) {
            return true;
        }
    }
    return false;
}

std::string dump(const MergeResult& r) {
    std::string out;
    for (const auto& f : r.findings) {
        out += f.toString() + "\n";
    }
    return out;
}

// A DistributedSampler's rows: rank `rank` of `ranks` holds rows rank, rank+ranks, ...
// of a [rows, cols] batch, one box per row.
Placement stridedRows(std::int64_t rank, std::int64_t ranks, Shape global) {
    Placement p;
    p.globalShape = global;
    for (std::int64_t local = 0; rank + local * ranks < global[0]; ++local) {
        p.boxes.push_back(Box{{{local, rank + local * ranks, 1}, {0, 0, global[1]}}});
    }
    return p;
}

const TensorId kId{"nominal", 0, 0, "layers.0.mlp", TensorKind::ForwardOutput, "0"};

} // namespace

class TestMerge : public QObject {
    Q_OBJECT
private slots:
    void copySplitRebuildsTensorAndBits() {
        std::vector<RawShard> shards{f32Shard(1, {1, 2}, rowsOf(1, 1, {2, 2}), {3, 4}),
                                     f32Shard(0, {1, 2}, rowsOf(0, 1, {2, 2}), {1, 2})};
        const auto r = mergeShards(kId, shards);
        QVERIFY2(r.findings.empty(), dump(r).c_str());
        QVERIFY(r.tensor);
        QCOMPARE(r.tensor->values, (std::vector<double>{1, 2, 3, 4}));
        QCOMPARE(r.tensor->rawBits.size(), std::size_t{16});
        float third = 0;
        std::memcpy(&third, r.tensor->rawBits.data() + 8, 4);
        QCOMPARE(third, 3.0f);
        QCOMPARE(r.tensor->shards.size(), std::size_t{2});
        QCOMPARE(r.tensor->shards.front().rank, 0); // sorted by rank
    }
    void sumAddsPartialsAndChecksReplicatedPartials() {
        const Shape g{1, 2};
        // partial 0 on ranks 0 and 2 (DP replicas), partial 1 on ranks 1 and 3
        std::vector<RawShard> shards{
            f32Shard(0, {1, 2}, rowsOf(0, 1, g, Combine::Sum, 0), {1.0f, 2.0f}),
            f32Shard(1, {1, 2}, rowsOf(0, 1, g, Combine::Sum, 1), {0.5f, 0.25f}),
            f32Shard(2, {1, 2}, rowsOf(0, 1, g, Combine::Sum, 0), {1.0f, 2.0f}),
            f32Shard(3, {1, 2}, rowsOf(0, 1, g, Combine::Sum, 1), {0.5f, 0.25f})};
        auto r = mergeShards(kId, shards);
        QVERIFY2(r.findings.empty(), dump(r).c_str());
        QCOMPARE(r.tensor->values, (std::vector<double>{1.5, 2.25}));
        QVERIFY(r.tensor->rawBits.empty()); // a sum has no stored bits
        shards[3] = f32Shard(3, {1, 2}, rowsOf(0, 1, g, Combine::Sum, 1), {0.5f, 0.75f});
        r = mergeShards(kId, shards);
        QVERIFY2(hasFinding(r, "replica-disagree", "ranks 1 and 3"), dump(r).c_str());
    }
    void replicasThatDisagreeNameBothRanks() {
        const Shape g{2, 2};
        std::vector<RawShard> shards{
            f32Shard(0, {2, 2}, rowsOf(0, 2, g, Combine::Replica), {1, 2, 3, 4}),
            f32Shard(2, {2, 2}, rowsOf(0, 2, g, Combine::Replica), {1, 2, 3, 5})};
        const auto r = mergeShards(kId, shards);
        QVERIFY2(hasFinding(r, "replica-disagree", "ranks 0 and 2 disagree at 1 elements"),
                 dump(r).c_str());
        QVERIFY2(hasFinding(r, "replica-disagree", "[1, 1]"), dump(r).c_str());
        QVERIFY(r.tensor); // the lowest rank's value is still shown
        QCOMPARE(r.tensor->values.back(), 4.0);
    }
    void overlapUnderCopyIsAnError() {
        const Shape g{2, 2};
        std::vector<RawShard> shards{f32Shard(0, {2, 2}, rowsOf(0, 2, g), {1, 2, 3, 4}),
                                     f32Shard(1, {1, 2}, rowsOf(1, 1, g), {3, 4})};
        const auto r = mergeShards(kId, shards);
        QVERIFY2(hasFinding(r, "overlap", "ranks 0 and 1 overlap at 2 elements"), dump(r).c_str());
    }
    void holeNamesFirstUncoveredIndex() {
        std::vector<RawShard> shards{f32Shard(0, {1, 2}, rowsOf(0, 1, {2, 2}), {1, 2})};
        const auto r = mergeShards(kId, shards);
        QVERIFY(!r.tensor);
        QVERIFY2(hasFinding(r, "hole", "2 of 4 elements"), dump(r).c_str());
        QVERIFY2(hasFinding(r, "hole", "[1, 0]"), dump(r).c_str());
    }
    void mismatchedShardsAreRefused() {
        std::vector<RawShard> shards{
            f32Shard(0, {1, 2}, rowsOf(0, 1, {2, 2}), {1, 2}),
            f32Shard(1, {1, 2}, rowsOf(1, 1, {2, 2}, Combine::Replica), {3, 4})};
        const auto r = mergeShards(kId, shards);
        QVERIFY(!r.tensor);
        QVERIFY(hasFinding(r, "shard-mismatch", "rank 1"));
    }
    void stridedRowsInterleave() {
        // DistributedSampler over 2 ranks: rank 0 holds rows 0 and 2, rank 1 rows 1 and 3.
        const Shape g{4, 2};
        std::vector<RawShard> shards{f32Shard(0, {2, 2}, stridedRows(0, 2, g), {0, 1, 4, 5}),
                                     f32Shard(1, {2, 2}, stridedRows(1, 2, g), {2, 3, 6, 7})};
        const auto r = mergeShards(kId, shards);
        QVERIFY2(r.findings.empty(), dump(r).c_str());
        QCOMPARE(r.tensor->values, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
    }
    void stridedRowsTakenForContiguousLeaveTheBatchPermuted() {
        // The same shards read as contiguous halves rebuild another tensor: the rows of a
        // strided batch must be placed as strided, or every activation compares permuted.
        const Shape g{4, 2};
        std::vector<RawShard> shards{f32Shard(0, {2, 2}, rowsOf(0, 2, g), {0, 1, 4, 5}),
                                     f32Shard(1, {2, 2}, rowsOf(2, 2, g), {2, 3, 6, 7})};
        const auto r = mergeShards(kId, shards);
        QVERIFY2(r.findings.empty(), dump(r).c_str());
        QCOMPARE(r.tensor->values, (std::vector<double>{0, 1, 4, 5, 2, 3, 6, 7}));
    }
    void stridedRowsWithAWrongOffsetOverlapAndLeaveAHole() {
        // Rank 1 placed with rank 0's offset: rows 0 and 2 twice, rows 1 and 3 nowhere.
        const Shape g{4, 2};
        std::vector<RawShard> shards{f32Shard(0, {2, 2}, stridedRows(0, 2, g), {0, 1, 4, 5}),
                                     f32Shard(1, {2, 2}, stridedRows(0, 2, g), {2, 3, 6, 7})};
        const auto r = mergeShards(kId, shards);
        QVERIFY(!r.tensor);
        QVERIFY2(hasFinding(r, "overlap", "ranks 0 and 1 overlap at 4 elements"), dump(r).c_str());
        QVERIFY2(hasFinding(r, "hole", "[1, 0]"), dump(r).c_str());
    }
    void largeTensorMergesInParallel() {
        // 4 column shards of a [512, 1024] tensor: exercises the parallel decode path.
        const Shape g{512, 1024};
        std::vector<RawShard> shards;
        for (int r = 0; r < 4; ++r) {
            std::vector<float> v(512 * 256);
            for (std::size_t i = 0; i < v.size(); ++i) {
                const auto row = static_cast<std::int64_t>(i / 256);
                const auto col = static_cast<std::int64_t>(i % 256) + r * 256;
                v[i] = static_cast<float>(row * 1024 + col);
            }
            Placement p;
            p.globalShape = g;
            p.boxes = {Box{{{0, 0, 512}, {0, r * 256, 256}}}};
            shards.push_back(f32Shard(r, {512, 256}, p, v));
        }
        const auto r = mergeShards(kId, shards);
        QVERIFY2(r.findings.empty(), dump(r).c_str());
        for (std::size_t i = 0; i < r.tensor->values.size(); i += 997) {
            QCOMPARE(r.tensor->values[i], static_cast<double>(i));
        }
    }
};

QTEST_APPLESS_MAIN(TestMerge)
#include "test_merge.moc"
