// Placement checks and the run iteration that every merge is built on.
#include "ttrace/io/placement.h"

#include <QtTest>

#include <tuple>
#include <vector>

using namespace ttrace;
using Run = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

namespace {
std::vector<Run> runs(const Placement& p, const Shape& local) {
    std::vector<Run> out;
    forEachRun(p, local,
               [&](std::int64_t l, std::int64_t g, std::int64_t n) { out.emplace_back(l, g, n); });
    return out;
}
} // namespace

class TestPlacement : public QObject {
    Q_OBJECT
private slots:
    void placementSourceNamesAndTrust() {
        QVERIFY(parsePlacementSource("declared") == PlacementSource::Declared);
        QVERIFY(parsePlacementSource("inferred") == PlacementSource::Inferred);
        QVERIFY(parsePlacementSource("annotated") == PlacementSource::Annotated);
        // Absent (bundles written before the attribute) or a value this build does not know.
        QVERIFY(parsePlacementSource("") == PlacementSource::Unknown);
        QVERIFY(parsePlacementSource("guessed") == PlacementSource::Unknown);
        QVERIFY(placementSourceName(PlacementSource::Inferred) == "inferred");
        QVERIFY(placementSourceName(PlacementSource::Unknown).empty());
        // A tensor is as trusted as its least trusted shard.
        using S = PlacementSource;
        QVERIFY(weakerSource(S::Declared, S::Annotated) == S::Annotated);
        QVERIFY(weakerSource(S::Inferred, S::Annotated) == S::Inferred);
        QVERIFY(weakerSource(S::Declared, S::Unknown) == S::Unknown);
        QVERIFY(weakerSource(S::Declared, S::Declared) == S::Declared);
    }
    void columnSplitOfMatrix() {
        // global [2, 4], this shard holds columns 2..3 as a [2, 2] tensor
        Placement p{{2, 4}, PlacementKind::Boxes, {Box{{{0, 0, 2}, {0, 2, 2}}}},
                    {},     Combine::Copy,        0,
                    false};
        QVERIFY(!checkPlacement(p, {2, 2}));
        const std::vector<Run> expected{{0, 2, 2}, {2, 6, 2}};
        QCOMPARE(runs(p, {2, 2}), expected);
    }
    void contextParallelTwoChunks() {
        // seq 8 split over cp=2 into 4 chunks of 2; rank 0 holds chunks 0 and 3.
        Placement p{{8, 3},
                    PlacementKind::Boxes,
                    {Box{{{0, 0, 2}, {0, 0, 3}}}, Box{{{2, 6, 2}, {0, 0, 3}}}},
                    {},
                    Combine::Copy,
                    0,
                    false};
        QVERIFY(!checkPlacement(p, {4, 3}));
        const std::vector<Run> expected{{0, 0, 3}, {3, 3, 3}, {6, 18, 3}, {9, 21, 3}};
        QCOMPARE(runs(p, {4, 3}), expected);
    }
    void flatRanges() {
        Placement p{{4, 4}, PlacementKind::Flat, {}, {{0, 5, 3}, {3, 12, 4}}, Combine::Copy, 0,
                    false};
        QVERIFY(!checkPlacement(p, {7}));
        const std::vector<Run> expected{{0, 5, 3}, {3, 12, 4}};
        QCOMPARE(runs(p, {7}), expected);
    }
    void rejectsBoxOutsideGlobalShape() {
        Placement p{{4}, PlacementKind::Boxes, {Box{{{0, 3, 2}}}}, {}, Combine::Copy, 0, false};
        const auto problem = checkPlacement(p, {2});
        QVERIFY(problem.has_value());
        QVERIFY2(problem->find("outside the global_shape") != std::string::npos, problem->c_str());
    }
    void rejectsBoxOutsideLocalShape() {
        Placement p{{4}, PlacementKind::Boxes, {Box{{{1, 0, 2}}}}, {}, Combine::Copy, 0, false};
        QVERIFY(checkPlacement(p, {2}).has_value());
    }
    void rejectsFlatRangeOutsideTensor() {
        Placement p{{2, 2}, PlacementKind::Flat, {}, {{0, 2, 3}}, Combine::Copy, 0, false};
        QVERIFY(checkPlacement(p, {3}).has_value());
    }
    void rejectsImplausiblyLargeShape() {
        // A corrupt global_shape must be refused before anything is allocated for it.
        Placement p{
            {1 << 30, 1 << 30, 8}, PlacementKind::Flat, {}, {{0, 0, 1}}, Combine::Copy, 0, false};
        const auto problem = checkPlacement(p, {1});
        QVERIFY(problem.has_value());
        QVERIFY2(problem->find("implausibly large") != std::string::npos, problem->c_str());
    }
    void rankMismatch() {
        Placement p{{2, 2}, PlacementKind::Boxes, {Box{{{0, 0, 2}, {0, 0, 2}}}},
                    {},     Combine::Copy,        0,
                    false};
        QVERIFY(checkPlacement(p, {4}).has_value());
    }
};

QTEST_APPLESS_MAIN(TestPlacement)
#include "test_placement.moc"
