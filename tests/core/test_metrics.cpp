// Comparison metrics and the error histogram against hand-computed values.
#include "ttrace/compare/metrics.h"

#include "compare/fused_sums.h"
#include "compare/metrics_from_sums.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace ttrace;

namespace {

FullTensor tensor(std::vector<double> values) {
    FullTensor t;
    t.shape = {static_cast<std::int64_t>(values.size())};
    t.values = std::move(values);
    return t;
}

// A [2, 2] candidate split into two row shards with `copy`.
FullTensor rowSplit(std::vector<double> values, Combine combine = Combine::Copy) {
    FullTensor t;
    t.shape = {2, 2};
    t.values = values;
    for (int r = 0; r < 2; ++r) {
        DecodedShard s;
        s.rank = r;
        s.localShape = {1, 2};
        s.placement.globalShape = {2, 2};
        s.placement.combine = combine;
        s.placement.boxes = {Box{{{0, r, 1}, {0, 0, 2}}}};
        s.values = {values[static_cast<std::size_t>(2 * r)],
                    values[static_cast<std::size_t>(2 * r + 1)]};
        t.shards.push_back(s);
    }
    return t;
}

constexpr double kTight = 1e-15;

// Bit-identical doubles (NaN equal to NaN).
bool same(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

bool sameHistogram(const ErrorHistogram& a, const ErrorHistogram& b) {
    return a.edges == b.edges && a.counts == b.counts && a.exactZero == b.exactZero &&
           a.nonFinite == b.nonFinite;
}

// A float32 tensor stored as bytes, and the same decoded as the element-wise path holds it.
struct Stored {
    std::vector<float> values;
    std::span<const std::byte> bytes() const { return std::as_bytes(std::span(values)); }
    StoredTensor view() const { return {DType::Float32, bytes()}; }
    std::vector<double> decoded() const { return {values.begin(), values.end()}; }
};

Stored noisy(const Stored& base, double scale, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    Stored out = base;
    for (auto& v : out.values) {
        v = std::isfinite(v) ? v * (1.0f + static_cast<float>(scale) * noise(gen)) : v;
    }
    return out;
}

// Two column shards of a [rows, cols] tensor (runs of cols / 2 elements), as the element-wise
// path holds them: each with its own decoded values.
std::vector<DecodedShard> columnShards(const std::vector<double>& values, std::int64_t rows,
                                       std::int64_t cols) {
    std::vector<DecodedShard> shards;
    for (int r = 0; r < 2; ++r) {
        DecodedShard s;
        s.rank = r;
        s.localShape = {rows, cols / 2};
        s.placement.globalShape = {rows, cols};
        s.placement.boxes = {Box{{{0, 0, rows}, {0, r * cols / 2, cols / 2}}}};
        forEachRun(s.placement, s.localShape, [&](std::int64_t, std::int64_t g, std::int64_t n) {
            s.values.insert(s.values.end(), values.begin() + g, values.begin() + g + n);
        });
        shards.push_back(std::move(s));
    }
    return shards;
}

} // namespace

class TestMetrics : public QObject {
    Q_OBJECT
private slots:
    void handComputedSmallCase() {
        // ref (3, 4), cand (3, 4.5): ||d|| = 0.5, ||ref|| = 5 -> 0.1;
        // cosine = (9 + 18) / (5 * sqrt(9 + 20.25)).
        const auto m = computeMetrics(tensor({3, 4}), tensor({3, 4.5}));
        QCOMPARE(m.elements, std::int64_t{2});
        QVERIFY(std::abs(m.relError - 0.1) < kTight);
        QCOMPARE(m.maxAbsError, 0.5);
        QVERIFY(std::abs(m.cosine - 27.0 / (5.0 * std::sqrt(29.25))) < kTight);
        QCOMPARE(m.refNorm, 5.0);
        QVERIFY(std::abs(m.candNorm - std::sqrt(29.25)) < kTight);
    }
    void identicalTensorsAreExact() {
        const auto m = computeMetrics(tensor({1, -2, 3}), tensor({1, -2, 3}));
        QCOMPARE(m.relError, 0.0);
        QCOMPARE(m.maxAbsError, 0.0);
        QCOMPARE(m.cosine, 1.0);
    }
    void zeroReferenceFallsBackToAbsoluteError() {
        const auto m = computeMetrics(tensor({0, 0}), tensor({3, 4}));
        QCOMPARE(m.relError, 5.0);
        QCOMPARE(m.cosine, 0.0);
        QCOMPARE(computeMetrics(tensor({0, 0}), tensor({0, 0})).cosine, 1.0);
    }
    void nonFiniteValuesAreCountedAndMismatchesAreInfinite() {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        // Same NaN/Inf on both sides: counted, but finite elements decide the error.
        auto m = computeMetrics(tensor({nan, inf, 3, 4}), tensor({nan, inf, 3, 4}));
        QCOMPARE(m.refNaN, std::int64_t{1});
        QCOMPARE(m.candInf, std::int64_t{1});
        QCOMPARE(m.nonFiniteMismatch, std::int64_t{0});
        QCOMPARE(m.relError, 0.0);
        // A NaN only the candidate has is never round-off.
        m = computeMetrics(tensor({1, 2, 3, 4}), tensor({1, nan, 3, 4}));
        QCOMPARE(m.candNaN, std::int64_t{1});
        QCOMPARE(m.nonFiniteMismatch, std::int64_t{1});
        QVERIFY(std::isinf(m.relError));
    }
    void largeTensorReducesInParallelDeterministically() {
        // 1M elements: ref = 1 everywhere, cand = 1 + 1e-3 on every 4th element.
        const std::size_t n = 1 << 20;
        std::vector<double> r(n, 1.0);
        std::vector<double> c(n, 1.0);
        for (std::size_t i = 0; i < n; i += 4) {
            c[i] += 1e-3;
        }
        const auto a = computeMetrics(tensor(r), tensor(c));
        const auto b = computeMetrics(tensor(r), tensor(c));
        // ||d||^2 = (n/4) * 1e-6, ||ref||^2 = n -> relError = 1e-3 / 2.
        QVERIFY(std::abs(a.relError - 5e-4) < 1e-12);
        QCOMPARE(a.relError, b.relError); // bit-identical run to run
        QCOMPARE(relativeError(c, r), a.relError);
    }
    void perShardErrorsNameTheDivergingRank() {
        // Row 1 (rank 1) is off by (0, 1): its piece has error 1 / ||(3, 4)|| = 0.2.
        const auto m = computeMetrics(rowSplit({1, 0, 3, 4}), rowSplit({1, 0, 3, 5}));
        QCOMPARE(m.shards.size(), std::size_t{2});
        QCOMPARE(m.shards[0].rank, 0);
        QCOMPARE(m.shards[0].relError, 0.0);
        QCOMPARE(m.shards[0].elements, std::int64_t{2});
        QVERIFY(std::abs(m.shards[1].relError - 0.2) < kTight);
    }
    void replicaShardsAreJudgedByTheirOwnValues() {
        // Two full replicas; rank 1's copy is wrong but the merged tensor shows rank 0's.
        auto cand = tensor({3, 4});
        for (int r = 0; r < 2; ++r) {
            DecodedShard s;
            s.rank = r;
            s.localShape = {2};
            s.placement.globalShape = {2};
            s.placement.combine = Combine::Replica;
            s.placement.boxes = {Box{{{0, 0, 2}}}};
            s.values = r == 0 ? std::vector<double>{3, 4} : std::vector<double>{3, 6};
            cand.shards.push_back(s);
        }
        const auto m = computeMetrics(tensor({3, 4}), cand);
        QCOMPARE(m.relError, 0.0);
        QCOMPARE(m.shards[0].relError, 0.0);
        QVERIFY(std::abs(m.shards[1].relError - 0.4) < kTight);
    }
    void histogramBinsInToleranceUnits() {
        // ref (1,1,1,1): rms 1, tolerance 1e-3 -> one unit = 1e-3 absolute.
        // errors: 0 (exact), 5e-4 (0.5 units -> bin [0.1,1)), 2e-3 (2 units -> [1,10)),
        // 5e3 (5e6 units -> last bin).
        const auto h = computeErrorHistogram(tensor({1, 1, 1, 1}),
                                             tensor({1, 1 + 5e-4, 1 + 2e-3, 1 + 5e3}), 1e-3);
        QCOMPARE(h.edges.size(), std::size_t{13});
        QCOMPARE(h.edges.front(), 1e-6);
        QCOMPARE(h.edges.back(), 1e6);
        QCOMPARE(h.counts.size(), std::size_t{12});
        QCOMPARE(h.exactZero, std::int64_t{1});
        QCOMPARE(h.counts[5], std::int64_t{1});  // [1e-1, 1)
        QCOMPARE(h.counts[6], std::int64_t{1});  // [1, 10)
        QCOMPARE(h.counts[11], std::int64_t{1}); // above 1e6 clamps into the last bin
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const auto g = computeErrorHistogram(tensor({1, 1}), tensor({nan, 1 + 1e-9}), 0.0);
        QCOMPARE(g.nonFinite, std::int64_t{1});
        QCOMPARE(g.counts.back(), std::int64_t{1}); // exact comparison: any error is "huge"
    }

    void histogramBinsMatchDecadesOfTenAcrossTheRange() {
        // Bins come from the exponent bits, not log10: every error from 1e-9 to 1e9 tolerance
        // units (including values just around each edge) must land in the bin whose
        // power-of-ten edges bracket it, exactly as floor(log10) defines the decades.
        std::vector<double> ref;
        std::vector<double> cand;
        std::vector<std::size_t> expected;
        for (int e = -9; e <= 9; ++e) {
            const double edge = std::pow(10.0, e);
            for (const double x : {edge, std::nextafter(edge, 0.0), edge * 1.5, edge * 9.99}) {
                ref.push_back(1.0);
                cand.push_back(1.0 + x);
                const double err = (1.0 + x) - 1.0; // the error the histogram actually sees
                int bin = 0;
                while (bin + 1 < 12 && err >= std::pow(10.0, bin + 1 - 6)) {
                    ++bin;
                }
                expected.push_back(static_cast<std::size_t>(bin));
            }
        }
        // rms of an all-ones reference is 1, so with tolerance 1 a unit is 1 absolute.
        std::vector<std::int64_t> counts(12, 0);
        for (const auto b : expected) {
            ++counts[b];
        }
        const auto h = computeErrorHistogram(tensor(ref), tensor(cand), 1.0);
        for (std::size_t i = 0; i < counts.size(); ++i) {
            QCOMPARE(h.counts[i], counts[i]);
        }
    }
    void fusedSumsAreBitIdenticalToTheElementWisePath() {
        // 300 x 202 elements: several reduction blocks, odd-length runs, the same non-finite
        // values on both sides (blocks that take the scalar path), two perturbed variants.
        const std::int64_t rows = 300, cols = 202;
        Stored ref;
        std::mt19937 gen(7);
        std::normal_distribution<float> dist(0.0f, 2.0f);
        for (std::int64_t i = 0; i < rows * cols; ++i) {
            ref.values.push_back(dist(gen));
        }
        ref.values[5] = std::numeric_limits<float>::quiet_NaN();
        ref.values[40000] = std::numeric_limits<float>::infinity();
        Stored cand = noisy(ref, 1e-6, 1);
        cand.values[123] = ref.values[123]; // exact zeros in the histogram
        cand.values[124] = 0.0f;
        const std::vector<Stored> variants{noisy(ref, 1e-7, 2), noisy(ref, 1e-7, 3)};

        FullTensor r = tensor(ref.decoded());
        FullTensor c = tensor(cand.decoded());
        c.shards = columnShards(c.values, rows, cols);
        const TensorMetrics expected = computeMetrics(r, c);
        const double tolerance = 3e-6;
        const ErrorHistogram expectedHist = computeErrorHistogram(r, c, tolerance);

        std::vector<StoredTensor> views;
        for (const auto& v : variants) {
            views.push_back(v.view());
        }
        const TotalSums totals = totalSums(ref.view(), cand.view(), views);
        const TensorMetrics m = metricsFromSums(totals.metrics);
        QVERIFY(std::isfinite(m.relError) && m.relError > 0.0);
        QVERIFY(same(m.relError, expected.relError));
        QVERIFY(same(m.maxAbsError, expected.maxAbsError));
        QVERIFY(same(m.cosine, expected.cosine));
        QVERIFY(same(m.refNorm, expected.refNorm));
        QVERIFY(same(m.candNorm, expected.candNorm));
        QCOMPARE(m.elements, expected.elements);
        QCOMPARE(m.nonFiniteMismatch, expected.nonFiniteMismatch);
        QCOMPARE(m.refNaN + m.refInf + m.candNaN + m.candInf,
                 expected.refNaN + expected.refInf + expected.candNaN + expected.candInf);
        for (std::size_t v = 0; v < variants.size(); ++v) {
            QVERIFY(same(relFromSums(totals.floors[v]),
                         relativeError(variants[v].decoded(), r.values)));
        }

        const double unit = tolerance * finiteRms(ref.view());
        std::vector<ShardBox> boxes;
        for (const auto& s : c.shards) {
            boxes.push_back({&s.placement, &s.localShape});
        }
        const ShardSums parts = shardSums(ref.view(), cand.view(), boxes, unit);
        QVERIFY(sameHistogram(parts.histogram, expectedHist));
        QCOMPARE(parts.shards.size(), expected.shards.size());
        for (std::size_t s = 0; s < parts.shards.size(); ++s) {
            const auto e = shardErrorFromSums(c.shards[s].rank, parts.shards[s]);
            QVERIFY(same(e.relError, expected.shards[s].relError));
            QCOMPARE(e.elements, expected.shards[s].elements);
        }
    }
    void fusedHistogramOfASmallTensorMatches() {
        // One block, errors spread over every decade, exact zeros and a zero tolerance unit.
        Stored ref{{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}};
        Stored cand{{1.0f, 2.5f, 3.0f + 1e-6f, 40.0f, 5.0f, -6.0f}};
        const FullTensor r = tensor(ref.decoded());
        const FullTensor c = tensor(cand.decoded());
        Placement whole;
        whole.globalShape = {6};
        whole.boxes = {Box{{{0, 0, 6}}}};
        const Shape local{6};
        for (const double tolerance : {1e-3, 0.0}) {
            const double unit = tolerance * finiteRms(ref.view());
            const auto parts = shardSums(ref.view(), cand.view(), {{&whole, &local}}, unit);
            QVERIFY(sameHistogram(parts.histogram, computeErrorHistogram(r, c, tolerance)));
        }
    }
};

QTEST_GUILESS_MAIN(TestMetrics)
#include "test_metrics.moc"
