// How an inferred placement with alternatives is settled by evidence: the reference's full
// shape, tiling, and the byte identity of copies taken for replicas; what stays unresolved,
// and how unresolved tensors reach the verdict, the exit status and the JSON report.
#include "compare/placement_resolution.h"
#include "ttrace/compare/report_json.h"
#include "ttrace/compare/verdict.h"
#include "ttrace/report/report_markdown.h"
#include "ttrace/report/verdict_text.h"

#include <QtTest>

#include <cstring>

using namespace ttrace;

namespace {

// A float32 shard of `local` shape whose elements are `values`, placed as `primary`.
std::pair<ShardRef, RawShard> shard(int rank, const Shape& local, const std::vector<float>& values,
                                    Placement primary) {
    ShardRef ref;
    ref.rank = rank;
    ref.localShape = local;
    ref.placement = primary;
    ref.placement.source = PlacementSource::Inferred;
    RawShard raw{rank, DType::Float32, local, ref.placement, {}};
    raw.raw.resize(values.size() * sizeof(float));
    std::memcpy(raw.raw.data(), values.data(), raw.raw.size());
    return {ref, raw};
}

// A placement of a local [rows, cols] piece at (row, col) of a global shape.
Placement boxAt(const Shape& global, std::int64_t rows, std::int64_t cols, std::int64_t row,
                std::int64_t col, Combine combine = Combine::Copy) {
    Placement p;
    p.globalShape = global;
    p.combine = combine;
    p.boxes.push_back(Box{{DimSlice{0, row, rows}, DimSlice{0, col, cols}}});
    return p;
}

struct Pair {
    std::vector<ShardRef> refs;
    std::vector<RawShard> raws;
};

// Two ranks of a [2, 2] local tensor: the capture's hypothesis splits dim 1 (sequence-first
// order, [2, 4]); the alternative splits dim 0 (batch-first, [4, 2]); a third takes them for
// replicas ([2, 2]).
Pair twoRanks(const std::vector<float>& a, const std::vector<float>& b) {
    Pair p;
    const std::vector<std::vector<float>> values{a, b};
    for (int r = 0; r < 2; ++r) {
        auto [ref, raw] = shard(r, {2, 2}, values[r], boxAt({2, 4}, 2, 2, 0, 2 * r));
        ref.hypothesis = "sequence-first (sb)";
        ref.alternatives.push_back({"batch-first (bs)", boxAt({4, 2}, 2, 2, 2 * r, 0)});
        ref.alternatives.push_back({"replica", boxAt({2, 2}, 2, 2, 0, 0, Combine::Replica)});
        for (auto& alt : ref.alternatives) {
            alt.placement.source = PlacementSource::Inferred;
        }
        p.refs.push_back(ref);
        p.raws.push_back(raw);
    }
    return p;
}

TensorId tensor() {
    TensorId id;
    id.module = "fc1";
    id.kind = TensorKind::ForwardOutput;
    id.index = "0";
    return id;
}

TensorResult resultWith(Status status) {
    TensorResult t;
    t.id = tensor();
    t.status = status;
    return t;
}

} // namespace

class TestPlacementResolution : public QObject {
    Q_OBJECT
private slots:
    void theReferenceShapePicksTheOnlySplitThatRebuildsIt() {
        const auto p = twoRanks({1, 2, 3, 4}, {5, 6, 7, 8});
        const auto r = resolveShards(tensor(), p.refs, p.raws, {4, 2});
        QCOMPARE(r.outcome, ResolutionOutcome::Chosen);
        QCOMPARE(r.resolution.chosen, std::string("batch-first (bs)"));
        QCOMPARE(r.resolution.hypothesis, std::string("sequence-first (sb)"));
        QVERIFY(r.merged && r.merged->tensor);
        QCOMPARE(r.merged->tensor->shape, (Shape{4, 2}));
        QCOMPARE(r.merged->tensor->values,
                 (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8})); // rank 0's rows first
        QCOMPARE(r.shards.front().placement.globalShape, (Shape{4, 2}));
        QCOMPARE(r.resolution.excluded.size(), std::size_t{2}); // [2, 4] and [2, 2]
        // The capture's own hypothesis is kept when it is the one that fits.
        const auto own = resolveShards(tensor(), p.refs, p.raws, {2, 4});
        QCOMPARE(own.outcome, ResolutionOutcome::Chosen);
        QCOMPARE(own.resolution.chosen, std::string("sequence-first (sb)"));
    }
    void replicasMustBeByteIdentical() {
        // Identical copies: only the replica hypothesis rebuilds [2, 2].
        const auto same = twoRanks({1, 2, 3, 4}, {1, 2, 3, 4});
        const auto kept = resolveShards(tensor(), same.refs, same.raws, {2, 2});
        QCOMPARE(kept.outcome, ResolutionOutcome::Chosen);
        QCOMPARE(kept.resolution.chosen, std::string("replica"));
        // Copies that differ, where the reference's shape leaves only the replica layout: they
        // are known replicas, so the difference is the divergence "replicas disagree" (a
        // reduction that did not run), never an open question that would hide it.
        const auto differ = twoRanks({1, 2, 3, 4}, {1, 2, 3, 5});
        const auto r = resolveShards(tensor(), differ.refs, differ.raws, {2, 2});
        QCOMPARE(r.outcome, ResolutionOutcome::Chosen);
        QCOMPARE(r.resolution.chosen, std::string("replica"));
        QVERIFY(r.merged.has_value());
        QVERIFY(std::any_of(r.merged->findings.begin(), r.merged->findings.end(),
                            [](const auto& f) { return f.code == "replica-disagree"; }));
    }
    void hypothesesThatRebuildDifferentTensorsOfOneShapeStayUnresolved() {
        // Square pieces: dim 0 and dim 1 splits of [2, 2] pieces both rebuild [4, 4] when the
        // alternatives are relabelled as two 2-D splits of one shape.
        auto p = twoRanks({1, 2, 3, 4}, {5, 6, 7, 8});
        for (int r = 0; r < 2; ++r) {
            auto& s = p.refs[static_cast<std::size_t>(r)];
            s.placement = boxAt({4, 4}, 2, 2, 0, 2 * r);
            s.placement.source = PlacementSource::Inferred;
            s.alternatives.resize(1);
            s.alternatives[0].placement = boxAt({4, 4}, 2, 2, 2 * r, 0);
            // Each hypothesis leaves half the tensor uncovered: a hole excludes both.
        }
        const auto holes = resolveShards(tensor(), p.refs, p.raws, {4, 4});
        QCOMPARE(holes.outcome, ResolutionOutcome::NoneFits);
        // Two tilings of [4, 2]: rows in rank order, or interleaved (rank r holds rows r, r+2).
        for (int r = 0; r < 2; ++r) {
            auto& s = p.refs[static_cast<std::size_t>(r)];
            s.placement = boxAt({4, 2}, 2, 2, 2 * r, 0);
            s.placement.source = PlacementSource::Inferred;
            Placement interleaved;
            interleaved.globalShape = {4, 2};
            interleaved.boxes.push_back(Box{{DimSlice{0, r, 1}, DimSlice{0, 0, 2}}});
            interleaved.boxes.push_back(Box{{DimSlice{1, r + 2, 1}, DimSlice{0, 0, 2}}});
            s.alternatives[0] = {"interleaved", interleaved};
        }
        const auto r = resolveShards(tensor(), p.refs, p.raws, {4, 2});
        QCOMPARE(r.outcome, ResolutionOutcome::Unresolved);
        QCOMPARE(r.resolution.alternatives,
                 (std::vector<std::string>{"sequence-first (sb)", "interleaved"}));
        // Identical pieces of identical rows make both tilings one tensor: that is an answer.
        auto same = p;
        const std::vector<float> rows{1, 2, 1, 2};
        for (auto& raw : same.raws) {
            std::memcpy(raw.raw.data(), rows.data(), raw.raw.size());
        }
        const auto one = resolveShards(tensor(), same.refs, same.raws, {4, 2});
        QCOMPARE(one.outcome, ResolutionOutcome::Chosen);
        QCOMPARE(one.resolution.chosen, std::string("sequence-first (sb)"));
    }
    void noHypothesisOfTheReferenceShapeLeavesTheStoredOne() {
        const auto p = twoRanks({1, 2, 3, 4}, {5, 6, 7, 8});
        const auto r = resolveShards(tensor(), p.refs, p.raws, {8, 8});
        QCOMPARE(r.outcome, ResolutionOutcome::NoneFits);
        QVERIFY(!r.merged);
    }
    void unresolvedTensorsKeepTheRunFromCleanAndReachEveryFrontEnd() {
        DiffResult r;
        r.tensors.push_back(resultWith(Status::Clean));
        auto open = resultWith(Status::Unresolved);
        open.id.index = "1";
        open.resolution.hypothesis = "seq, sequence-first (sb)";
        open.resolution.alternatives = {"seq, sequence-first (sb)", "seq, batch-first (bs)"};
        r.tensors.push_back(open);
        assembleVerdicts(r, {ModuleInfo{"fc1", 0, 0, "Linear", ""}});
        QCOMPARE(r.summary.unresolved, std::size_t{1});
        QCOMPARE(r.summary.compared, std::size_t{1});
        QVERIFY(!r.summary.clean);
        QCOMPARE(runVerdict(r), RunVerdict::Unresolved);
        QCOMPARE(exitCodeFor(r), 3);
        QVERIFY(verdictLine(r).rfind("UNRESOLVED: 1 tensor's inferred placement", 0) == 0);
        const auto md = diffResultToMarkdown(r);
        QVERIFY(md.rfind("# TTrace diff: UNRESOLVED", 0) == 0);
        QVERIFY(md.find("0 invalid, 1 unresolved |") != std::string::npos);
        QVERIFY(md.find("seq, sequence-first (sb) or seq, batch-first (bs) could each rebuild") !=
                std::string::npos);
        // A divergence outranks it in the exit status; the line still counts it.
        auto bad = resultWith(Status::Divergent);
        bad.id.index = "2";
        bad.ratio = 5.0;
        r.tensors.push_back(bad);
        assembleVerdicts(r, {ModuleInfo{"fc1", 0, 0, "Linear", ""}});
        QCOMPARE(exitCodeFor(r), 1);
        QVERIFY(verdictLine(r).find(unresolvedText(1)) != std::string::npos);
        // The JSON report carries the count and the alternatives, and reads them back.
        const auto text = diffResultToJson(r, false);
        std::string error;
        const auto back = diffResultFromJson(text, error);
        QVERIFY2(back.has_value(), error.c_str());
        QCOMPARE(back->summary.unresolved, std::size_t{1});
        const auto it = std::find_if(back->tensors.begin(), back->tensors.end(),
                                     [](const TensorResult& t) { return t.id.index == "1"; });
        QVERIFY(it != back->tensors.end());
        QCOMPARE(it->status, Status::Unresolved);
        QCOMPARE(it->resolution.alternatives, open.resolution.alternatives);
    }
};

QTEST_APPLESS_MAIN(TestPlacementResolution)
#include "test_placement_resolution.moc"
