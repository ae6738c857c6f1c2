// The element view's engine: the worst elements and the error along one dimension, on a
// tensor with planted errors (exact indices and values) and on the demo's sharded candidate
// (TP2 x DP2, read through the merge) against what the diff measured for the same tensor.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/compare/element_errors.h"

#include <QtTest>

#include <cmath>
#include <filesystem>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

FullTensor tensorOf(Shape shape, std::vector<double> values) {
    FullTensor t;
    t.shape = std::move(shape);
    t.values = std::move(values);
    return t;
}

} // namespace

class TestElementErrors : public QObject {
    Q_OBJECT
private slots:
    void plantedErrorsAreFoundWhereTheyAre() {
        // A [2, 3, 4] tensor; errors planted at (1, 2, 3), (0, 1, 0) and a NaN at (1, 0, 1).
        std::vector<double> ref(24);
        for (std::size_t i = 0; i < ref.size(); ++i) {
            ref[i] = 1.0 + 0.1 * static_cast<double>(i);
        }
        auto cand = ref;
        cand[23] += 5.0;
        cand[4] -= 0.5;
        cand[13] = std::nan("");
        ElementQuery q;
        q.tolerance = 1e-3;
        q.top = 3;
        q.dimension = 1;
        const auto r = elementErrors(tensorOf({2, 3, 4}, ref), tensorOf({2, 3, 4}, cand), q);
        QVERIFY(r.problems.empty() && !r.cancelled);
        QCOMPARE(r.largest.size(), std::size_t{3});
        QCOMPARE(r.largest[0].index, (std::vector<std::int64_t>{1, 0, 1})); // the NaN first
        QVERIFY(std::isinf(r.largest[0].error));
        QCOMPARE(r.largest[1].index, (std::vector<std::int64_t>{1, 2, 3}));
        QCOMPARE(r.largest[1].reference, ref[23]);
        QCOMPARE(r.largest[1].candidate, ref[23] + 5.0);
        QCOMPARE(r.largest[1].error, 5.0);
        QCOMPARE(r.largest[2].index, (std::vector<std::int64_t>{0, 1, 0}));
        double sumSq = 0.0;
        for (const double v : ref) {
            sumSq += v * v;
        }
        QCOMPARE(r.elementTolerance, 1e-3 * std::sqrt(sumSq / 24.0));
        QCOMPARE(r.largest[1].tolerance, r.elementTolerance);
        // Along dimension 1 (size 3): index 0 holds the NaN at (1, 0, 1), index 1 holds
        // (0, 1, 0), index 2 holds (1, 2, 3).
        QCOMPARE(r.dimension, 1);
        QCOMPARE(r.slices.size(), std::size_t{3});
        QCOMPARE(r.slices[2].maxAbsError, 5.0);
        QCOMPARE(r.slices[1].maxAbsError, 0.5);
        QVERIFY(std::isinf(r.slices[0].maxAbsError));
        double refSq = 0.0; // index 2 along dimension 1: flat i with (i / 4) % 3 == 2
        for (std::size_t i = 0; i < 24; ++i) {
            if ((i / 4) % 3 == 2) {
                refSq += ref[i] * ref[i];
            }
        }
        QCOMPARE(r.slices[2].relError, 5.0 / std::sqrt(refSq));
        QCOMPARE(r.slices[2].ratio, r.slices[2].relError / 1e-3);
    }

    void mismatchedShapesAndCancelSayWhy() {
        ElementQuery q;
        q.id.module = "fc1";
        const auto bad = elementErrors(tensorOf({2}, {1, 2}), tensorOf({1}, {1}), q);
        QCOMPARE(bad.problems.size(), std::size_t{1});
        QVERIFY(bad.problems[0].message.find("[2]") != std::string::npos);
        const auto cancelled = elementErrors(tensorOf({2}, {1, 2}), tensorOf({2}, {1, 2}), q,
                                             [](double, std::string_view) { return false; });
        QVERIFY(cancelled.cancelled && cancelled.largest.empty());
    }

    void shardedCandidateAgreesWithTheDiff() {
        const fs::path demo = qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
        const auto ref = openBundle(demo / "bug" / "reference");
        const auto cand = openBundle(demo / "bug" / "candidate");
        QVERIFY(ref.ok() && cand.ok());
        const auto diff = diffBundles(*ref.bundle, *cand.bundle, DiffOptions{});
        QVERIFY(diff.firstDivergence);
        const TensorResult& t = diff.tensors[diff.firstDivergence->tensor];
        QVERIFY(t.metrics.shards.size() > 1); // sharded: the merge rebuilt it
        ElementQuery q;
        q.id = t.id;
        q.tolerance = t.tolerance.value;
        q.top = 10;
        q.dimension = static_cast<int>(t.shape.size()) - 1;
        int reports = 0;
        const auto r =
            inspectElements(*ref.bundle, *cand.bundle, q, [&reports](double, std::string_view) {
                ++reports;
                return true;
            });
        QVERIFY2(r.problems.empty(), r.problems.empty() ? "" : r.problems[0].toString().c_str());
        QVERIFY(reports >= 2);
        QCOMPARE(r.shape, t.shape);
        QVERIFY(!r.largest.empty());
        // The worst element is the diff's max abs error; the list is worst first.
        QCOMPARE(r.largest.front().error, t.metrics.maxAbsError);
        for (std::size_t i = 1; i < r.largest.size(); ++i) {
            QVERIFY(r.largest[i - 1].error >= r.largest[i].error);
        }
        // The slices add up to the tensor: sqrt(sum ||d_k||^2 / sum ||r_k||^2) = relError.
        double diffSq = 0.0;
        double refSq = 0.0;
        const auto merged = mergeTensor(*ref.bundle, t.id);
        const auto mergedCand = mergeTensor(*cand.bundle, t.id);
        QVERIFY(merged.tensor && mergedCand.tensor);
        for (std::size_t i = 0; i < merged.tensor->values.size(); ++i) {
            const double d = mergedCand.tensor->values[i] - merged.tensor->values[i];
            diffSq += d * d;
            refSq += merged.tensor->values[i] * merged.tensor->values[i];
        }
        QVERIFY(std::abs(std::sqrt(diffSq / refSq) - t.metrics.relError) <=
                1e-9 * t.metrics.relError);
        QCOMPARE(r.slices.size(), static_cast<std::size_t>(t.shape.back()));
        double slicesDiffSq = 0.0;
        double slicesRefSq = 0.0;
        for (std::size_t k = 0; k < r.slices.size(); ++k) {
            // Each slice's share, rebuilt from the merged values along the last dimension.
            double d = 0.0;
            double ref2 = 0.0;
            for (std::size_t i = k; i < merged.tensor->values.size(); i += r.slices.size()) {
                const double e = mergedCand.tensor->values[i] - merged.tensor->values[i];
                d += e * e;
                ref2 += merged.tensor->values[i] * merged.tensor->values[i];
            }
            QVERIFY(std::abs(r.slices[k].relError - std::sqrt(d / ref2)) <=
                    1e-12 * std::max(r.slices[k].relError, 1e-300));
            slicesDiffSq += d;
            slicesRefSq += ref2;
        }
        QVERIFY(std::abs(std::sqrt(slicesDiffSq / slicesRefSq) - t.metrics.relError) <=
                1e-9 * t.metrics.relError);
    }
};

QTEST_GUILESS_MAIN(TestElementErrors)
#include "test_element_errors.moc"
