// The comparison straight from stored bytes (compare/clean_comparison.h) against the
// element-wise path on the demo bundles: every tensor it takes must come out bit-identical
// (status, ratio, tolerance, metrics, per-shard errors, histogram); the divergent tensors of
// the bug demo and the sum partials must be left to the element-wise path.
#include "compare/clean_comparison.h"

#include <QtTest>

#include <cstring>
#include <filesystem>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

fs::path demoDir() {
    return qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
}

bool same(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

bool sameTolerance(const Tolerance& a, const Tolerance& b) {
    return same(a.value, b.value) && same(a.analytic, b.analytic) &&
           a.empirical.has_value() == b.empirical.has_value() &&
           (!a.empirical || same(*a.empirical, *b.empirical)) && same(a.floorMean, b.floorMean) &&
           same(a.floorSpread, b.floorSpread) && a.depth == b.depth && a.source == b.source &&
           a.perturbedSamples == b.perturbedSamples && same(a.carriedMean, b.carriedMean);
}

bool sameMetrics(const TensorMetrics& a, const TensorMetrics& b) {
    bool ok = same(a.relError, b.relError) && same(a.maxAbsError, b.maxAbsError) &&
              same(a.cosine, b.cosine) && same(a.refNorm, b.refNorm) &&
              same(a.candNorm, b.candNorm) && a.elements == b.elements &&
              a.nonFiniteMismatch == b.nonFiniteMismatch && a.shards.size() == b.shards.size();
    for (std::size_t i = 0; ok && i < a.shards.size(); ++i) {
        ok = a.shards[i].rank == b.shards[i].rank && a.shards[i].elements == b.shards[i].elements &&
             same(a.shards[i].relError, b.shards[i].relError);
    }
    return ok;
}

bool sameHistogram(const ErrorHistogram& a, const ErrorHistogram& b) {
    return a.edges == b.edges && a.counts == b.counts && a.exactZero == b.exactZero &&
           a.nonFinite == b.nonFinite;
}

struct PairCount {
    std::size_t clean = 0;    // taken by the clean path, and identical
    std::size_t declined = 0; // left to the element-wise path
    std::size_t divergentDeclined = 0;
};

PairCount comparePaths(const fs::path& pair) {
    const auto ref = openBundle(pair / "reference");
    const auto cand = openBundle(pair / "candidate");
    PairCount count;
    if (!ref.ok() || !cand.ok()) {
        qWarning("cannot open %s", pair.string().c_str());
        return count;
    }
    const ToleranceSettings settings;
    ComparisonContext ctx{*ref.bundle, *cand.bundle, settings, {}, 0, {}, {}, {}, false, {}};
    for (const auto& v : ref.bundle->manifest().variants) {
        if (v != "nominal") {
            ctx.perturbedVariants.push_back(v);
        }
    }
    for (const auto& m : ref.bundle->manifest().modules) {
        ctx.maxDepth = std::max(ctx.maxDepth, m.depth);
    }
    for (const auto& [id, shards] : cand.bundle->tensors()) {
        if (id.variant != "nominal" || !ref.bundle->shards(id)) {
            continue;
        }
        const TensorResult old = compareTensor(ctx, id, false);
        TensorResult fast;
        if (!compareClean(ctx, id, fast)) {
            ++count.declined;
            count.divergentDeclined += old.status == Status::Divergent ? 1 : 0;
            continue;
        }
        const bool ok = fast.status == old.status && same(fast.ratio, old.ratio) &&
                        sameTolerance(fast.tolerance, old.tolerance) &&
                        sameMetrics(fast.metrics, old.metrics) &&
                        sameHistogram(fast.histogram, old.histogram) && old.findings.empty();
        if (!ok) {
            qWarning("paths differ on %s", id.path().c_str());
            return {};
        }
        ++count.clean;
    }
    return count;
}

} // namespace

class TestCleanComparison : public QObject {
    Q_OBJECT
private slots:
    void cleanPairIsBitIdenticalToTheElementWisePath() {
        const auto count = comparePaths(demoDir() / "clean");
        qInfo("clean pair: %zu by the clean path, %zu element-wise", count.clean, count.declined);
        QVERIFY(count.clean > 0);
        QVERIFY(count.declined > 0); // the sum partials
    }
    void divergentTensorsAreLeftToTheElementWisePath() {
        const auto count = comparePaths(demoDir() / "bug");
        qInfo("bug pair: %zu by the clean path, %zu element-wise (%zu divergent)", count.clean,
              count.declined, count.divergentDeclined);
        QVERIFY(count.clean > 0);
        QVERIFY(count.divergentDeclined > 0);
    }
};

QTEST_GUILESS_MAIN(TestCleanComparison)
#include "test_clean_comparison.moc"
