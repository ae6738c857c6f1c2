// The error's shape on synthetic merged tensors: each signature is found with its evidence,
// and no signature is claimed for an error without one. Plus the bug-class hints they map to.
#include "ttrace/compare/bug_class.h"
#include "ttrace/compare/shape_diagnosis.h"

#include <QtTest>

#include <cmath>
#include <random>

using namespace ttrace;

namespace {

// A [rows, cols] tensor split along dim 0 into `parts` copy boxes, one per rank; `cand`
// values per element; each shard's own values are the candidate's over its box.
FullTensor split(const std::vector<double>& values, std::int64_t rows, std::int64_t cols, int parts,
                 Combine combine = Combine::Copy) {
    FullTensor t;
    t.shape = {rows, cols};
    t.values = values;
    const std::int64_t step = combine == Combine::Copy ? rows / parts : rows;
    for (int r = 0; r < parts; ++r) {
        DecodedShard s;
        s.rank = r;
        const std::int64_t start = combine == Combine::Copy ? r * step : 0;
        s.localShape = {step, cols};
        s.placement.globalShape = t.shape;
        s.placement.combine = combine;
        s.placement.boxes = {Box{{{0, start, step}, {0, 0, cols}}}};
        s.values.assign(values.begin() + start * cols, values.begin() + (start + step) * cols);
        t.shards.push_back(std::move(s));
    }
    return t;
}

std::vector<double> smooth(std::size_t n, unsigned seed = 7) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> d(0.0, 1.0);
    std::vector<double> v(n);
    for (auto& x : v) {
        x = d(gen);
    }
    return v;
}

const ParallelSizes kLayout{{"tp", 2}, {"dp", 2}, {"cp", 1}, {"micro_batches", 2}};
const Diagnostics kNoFindings;

std::vector<ShapeSignature> diagnose(const FullTensor& ref, const FullTensor& cand,
                                     double tol = 1e-6) {
    return diagnoseShape({ref, cand, tol, kLayout, kNoFindings});
}

bool has(const std::vector<ShapeSignature>& sigs, SignatureKind kind) {
    return std::any_of(sigs.begin(), sigs.end(),
                       [kind](const ShapeSignature& s) { return s.kind == kind; });
}

const ShapeSignature& get(const std::vector<ShapeSignature>& sigs, SignatureKind kind) {
    return *std::find_if(sigs.begin(), sigs.end(),
                         [kind](const ShapeSignature& s) { return s.kind == kind; });
}

} // namespace

class TestShapeDiagnosis : public QObject {
    Q_OBJECT
private slots:
    void constantFactorIsNamedAndHinted() {
        const auto r = smooth(64);
        auto c = r;
        for (auto& x : c) {
            x *= 0.5;
        }
        const auto sigs = diagnose(split(r, 8, 8, 2), split(c, 8, 8, 2));
        QVERIFY(has(sigs, SignatureKind::ConstantFactor));
        const auto& f = get(sigs, SignatureKind::ConstantFactor);
        QCOMPARE(std::round(f.factor * 1000) / 1000, 0.5);
        QVERIFY2(f.summary.find("1/dp") != std::string::npos, f.summary.c_str());
        TensorId id;
        id.module = "layers.0.mlp.fc1";
        id.kind = TensorKind::MainGrad;
        const std::string fp32 = "fp32";
        QCOMPARE(bugClassHint({id, sigs, kLayout, fp32}).bugClass,
                 std::string("dp-grad-sum-not-mean"));
    }
    void distributedOptimizerHintOnlyWithShardedOptimizerState() {
        TensorId id;
        id.module = "layers.0.mlp.fc1";
        id.kind = TensorKind::ParamAfterStep;
        const std::vector<ShapeSignature> none;
        const std::string fp32 = "fp32";
        QCOMPARE(bugClassHint({id, none, kLayout, fp32, true}).bugClass,
                 std::string("dist-opt-wrong-offset"));
        // Without a distributed optimizer there are no buffer offsets to get wrong.
        const auto plain = bugClassHint({id, none, kLayout, fp32, false});
        QVERIFY(plain.bugClass.empty());
        QVERIFY(plain.text.find("clipping") != std::string::npos);
    }
    void signFlip() {
        const auto r = smooth(64);
        auto c = r;
        for (auto& x : c) {
            x = -x;
        }
        QVERIFY(has(diagnose(split(r, 8, 8, 2), split(c, 8, 8, 2)), SignatureKind::SignFlip));
    }
    void oneSliceWrong() {
        const auto r = smooth(64);
        auto c = r;
        for (std::size_t i = 40; i < 48; ++i) { // inside rank 1's half (rows 4..7)
            c[i] += 0.3;
        }
        const auto sigs = diagnose(split(r, 8, 8, 2), split(c, 8, 8, 2));
        QVERIFY(has(sigs, SignatureKind::SliceLocal));
        QCOMPARE(get(sigs, SignatureKind::SliceLocal).ranks, std::vector<int>{1});
        QVERIFY(!has(sigs, SignatureKind::ConstantFactor));
    }
    void swappedSlices() {
        const auto r = smooth(64);
        std::vector<double> c(r.begin() + 32, r.end()); // rank 0 holds rank 1's rows
        c.insert(c.end(), r.begin(), r.begin() + 32);
        const auto sigs = diagnose(split(r, 8, 8, 2), split(c, 8, 8, 2));
        QVERIFY(has(sigs, SignatureKind::SlicePermutation));
        QCOMPARE(get(sigs, SignatureKind::SlicePermutation).indices,
                 (std::vector<std::int64_t>{1, 0}));
    }
    void zeroedRows() {
        const auto r = smooth(64);
        auto c = r;
        for (const std::size_t row : {2, 5}) {
            std::fill_n(c.begin() + static_cast<std::ptrdiff_t>(row * 8), 8, 0.0);
        }
        const auto sigs = diagnose(split(r, 8, 8, 1), split(c, 8, 8, 1));
        QVERIFY(has(sigs, SignatureKind::ZeroedRows));
        QCOMPARE(get(sigs, SignatureKind::ZeroedRows).indices, (std::vector<std::int64_t>{2, 5}));
        TensorId id;
        id.module = "embedding";
        const std::string fp32 = "fp32";
        QCOMPARE(bugClassHint({id, sigs, kLayout, fp32}).bugClass,
                 std::string("vocab-embedding-off-by-one"));
    }
    void everyWrongReplicaIsNamedWhateverRankLeads() {
        // Four replicas in two camps, all wrong: compared only with rank 0, ranks 0 and 1
        // would look like "the same"; compared with each other and with the reference, every
        // rank is named with its relative difference.
        const auto r = smooth(16);
        auto ref = split(r, 1, 16, 4, Combine::Replica);
        auto cand = split(r, 1, 16, 4, Combine::Replica);
        const auto drift = smooth(16, 3);
        for (int k = 0; k < 4; ++k) {
            for (std::size_t i = 0; i < 16; ++i) {
                cand.shards[k].values[i] += (k < 2 ? 0.5 : -0.5) * drift[i];
            }
        }
        cand.values = cand.shards[0].values;
        ref.shape = cand.shape = {16};
        for (auto* t : {&ref, &cand}) {
            for (auto& s : t->shards) {
                s.localShape = {16};
                s.placement.globalShape = {16};
                s.placement.boxes = {Box{{{0, 0, 16}}}};
            }
        }
        const auto sigs = diagnose(ref, cand);
        QVERIFY(has(sigs, SignatureKind::ReplicasDisagree));
        const auto& sig = get(sigs, SignatureKind::ReplicasDisagree);
        QCOMPARE(sig.ranks, (std::vector<int>{0, 1, 2, 3}));
        QVERIFY2(sig.evidence.find("copies group as ranks 0, 1 | ranks 2, 3") != std::string::npos,
                 sig.evidence.c_str());
        QVERIFY2(sig.summary.find("ranks 0, 1, 2, 3") != std::string::npos, sig.summary.c_str());
    }
    void replicasDisagree() {
        const auto r = smooth(16);
        auto ref = split(r, 1, 16, 2, Combine::Replica);
        auto cand = split(r, 1, 16, 2, Combine::Replica);
        const auto drift = smooth(16, 3);
        for (std::size_t i = 0; i < 16; ++i) {
            cand.shards[1].values[i] += 0.3 * drift[i]; // rank 1's copy drifted apart
        }
        ref.shape = cand.shape = {16};
        for (auto* t : {&ref, &cand}) {
            for (auto& s : t->shards) {
                s.localShape = {16};
                s.placement.globalShape = {16};
                s.placement.boxes = {Box{{{0, 0, 16}}}};
            }
        }
        cand.values[0] += 0.01; // the merged copy is a little off too, so the tensor diverges
        const auto sigs = diagnose(ref, cand);
        QVERIFY(has(sigs, SignatureKind::ReplicasDisagree));
        // Rank 0's copy is the reference's: only rank 1 is wrong, as the per-rank plot shows.
        const auto& sig = get(sigs, SignatureKind::ReplicasDisagree);
        QCOMPARE(sig.ranks, (std::vector<int>{1}));
        QVERIFY2(sig.evidence.find("relative difference to the reference: rank 1 ") !=
                         std::string::npos &&
                     sig.evidence.find("differ by") == std::string::npos,
                 sig.evidence.c_str());
        TensorId id;
        id.module = "layers.0.input_layernorm";
        id.kind = TensorKind::MainGrad;
        const std::string fp32 = "fp32";
        QCOMPARE(bugClassHint({id, sigs, kLayout, fp32}).bugClass,
                 std::string("sp-norm-grad-not-reduced"));
        // An expert's copies disagreeing is its expert-DP reduction, even when TP > 1.
        id.module = "decoder.layers.0.mlp.experts.local_experts.0.linear_fc1";
        QCOMPARE(bugClassHint({id, sigs, kLayout, fp32}).bugClass,
                 std::string("expert-grad-not-reduced"));
    }
    void transposed() {
        const auto r = smooth(64);
        std::vector<double> c(64);
        for (std::size_t i = 0; i < 8; ++i) {
            for (std::size_t j = 0; j < 8; ++j) {
                c[j * 8 + i] = r[i * 8 + j];
            }
        }
        QVERIFY(has(diagnose(split(r, 8, 8, 1), split(c, 8, 8, 1)), SignatureKind::Transpose));
    }
    void noSignatureForUnstructuredError() {
        const auto r = smooth(64, 1);
        auto c = r;
        const auto noise = smooth(64, 2);
        for (std::size_t i = 0; i < c.size(); ++i) {
            c[i] += 0.2 * noise[i];
        }
        QVERIFY(diagnose(split(r, 8, 8, 2), split(c, 8, 8, 2)).empty());
    }
    void cleanTensorHasNoSignature() {
        const auto r = smooth(64);
        QVERIFY(diagnose(split(r, 8, 8, 2), split(r, 8, 8, 2)).empty());
    }
};

QTEST_GUILESS_MAIN(TestShapeDiagnosis)
#include "test_shape_diagnosis.moc"
