// Comparison metrics and the error histogram against hand-computed values.
#include "ttrace/metrics.h"

#include <QtTest>

#include <cmath>
#include <limits>

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
};

QTEST_GUILESS_MAIN(TestMetrics)
#include "test_metrics.moc"
