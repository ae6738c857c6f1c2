// End to end on the demo bundles (python -m ttrace_testing.demo_bundles): a correct TP2xDP2
// candidate must come out clean, the injected bug must be found where it is, a subtle bug a few
// times the round-off floor must be flagged, and the summary cache must hit and invalidate.
#include "ttrace/compare/cache_fingerprint.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/compare/diff_engine.h"
#include "ttrace/compare/report_json.h"
#include "ttrace/report/report_markdown.h"

#include "bundle_edits.h"

#include <QtTest>

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unistd.h>

using namespace ttrace;
namespace fs = std::filesystem;

using ttrace::test::forgetChecksums;
using ttrace::test::scaleDataset;

namespace {

fs::path demoDir() {
    return qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
}

DiffOptions noCache() {
    DiffOptions o;
    o.useCache = false;
    return o;
}

std::string dump(const DiffResult& r) {
    std::string out;
    for (const auto& d : r.diagnostics) {
        out += d.toString() + "\n";
    }
    return out;
}

const TensorResult* find(const DiffResult& r, const std::string& module, TensorKind kind,
                         std::int64_t iteration, std::int64_t mb) {
    for (const auto& t : r.tensors) {
        if (t.id.module == module && t.id.kind == kind && t.id.iteration == iteration &&
            t.id.microBatch == mb) {
            return &t;
        }
    }
    return nullptr;
}

} // namespace

class TestDiff : public QObject {
    Q_OBJECT
private:
    fs::path scratch_;

private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(demoDir() / "clean" / "candidate" / "manifest.json"),
                 "run the demo_bundles fixture first");
        scratch_ = fs::temp_directory_path() /
                   ("ttrace-test-diff-" + std::to_string(QCoreApplication::applicationPid()));
        fs::remove_all(scratch_);
        fs::create_directories(scratch_);
    }
    void cleanupTestCase() { fs::remove_all(scratch_); }

    void correctDistributedCandidateIsClean() {
        std::size_t streamed = 0;
        std::mutex m;
        const auto r =
            diffBundleDirs(demoDir() / "clean" / "reference", demoDir() / "clean" / "candidate",
                           noCache(), {}, [&](const TensorResult&) {
                               const std::lock_guard lock(m);
                               ++streamed;
                           });
        QVERIFY2(r.diagnostics.empty(), dump(r).c_str());
        QVERIFY(r.summary.clean);
        QCOMPARE(r.summary.divergent, std::size_t{0});
        QVERIFY(r.summary.compared > 100);
        QCOMPARE(streamed, r.tensors.size());
        QCOMPARE(r.summary.perturbedVariants, std::size_t{2});
        qInfo("clean demo: %zu tensors, max ratio %g", r.summary.compared, r.summary.maxRatio);
        // The promise: no false alarm, with margin.
        QVERIFY(r.summary.maxRatio <= 1.0);
        // The analytic bound beside it (docs/tolerance.md, "Analytic bound"), from the reduction
        // paths of the real demo bundles: a gradient's path holds the whole forward, so it is
        // longer than the forward output of the last module; a seeded parameter has none.
        double lastForward = 0.0, shortestGradient = 1e300;
        for (const auto& t : r.tensors) {
            if (t.tolerance.source != "empirical") {
                QFAIL(("expected empirical tolerance for " + t.id.label()).c_str());
            }
            QCOMPARE(t.tolerance.provisional, Provisional::None);
            QVERIFY(t.tolerance.analytic >= kMinEpsMultiple * t.tolerance.eps);
            const double len = t.tolerance.reductionLength;
            if (t.id.kind == TensorKind::ForwardOutput) {
                lastForward = std::max(lastForward, len);
            } else if (t.id.kind == TensorKind::InputGrad || t.id.kind == TensorKind::MainGrad) {
                shortestGradient = std::min(shortestGradient, len);
            } else if (t.id.kind == TensorKind::Parameter && t.id.iteration == 0) {
                QCOMPARE(len, 0.0);
            }
        }
        QVERIFY2(lastForward > 0.0 && shortestGradient >= lastForward,
                 (std::to_string(lastForward) + " " + std::to_string(shortestGradient)).c_str());
        QVERIFY(!r.firstForwardDivergence && !r.firstBackwardDivergence);
        QCOMPARE(r.modules.front().name, std::string("layers.0"));
    }
    void injectedBugIsLocalized() {
        const auto r = diffBundleDirs(demoDir() / "bug" / "reference",
                                      demoDir() / "bug" / "candidate", noCache());
        QVERIFY2(r.diagnostics.empty(), dump(r).c_str());
        QVERIFY(!r.summary.clean);
        QCOMPARE(r.firstForwardDivergence.value_or(""), std::string("layers.1.mlp.fc2"));
        const auto* fc2 = r.module("layers.1.mlp.fc2");
        QVERIFY(fc2);
        QCOMPARE(fc2->origin, Origin::Introduced);
        QVERIFY(fc2->inputRatio <= 1.0);
        QCOMPARE(r.module("layers.1.mlp.act")->origin, Origin::Inherited);
        QCOMPARE(r.module("loss")->origin, Origin::Inherited);
        // Everything before the bug in iteration 0 is still clean.
        const auto* before = find(r, "layers.1.mlp.act", TensorKind::ForwardOutput, 0, 0);
        QVERIFY(before && before->status == Status::Clean);
        const auto* out = find(r, "layers.1.mlp.fc2", TensorKind::ForwardOutput, 0, 0);
        QVERIFY(out && out->status == Status::Divergent);
        // The bug is on rank 1 (tp 1, dp 0): the dp-0 rows diverge, the dp-1 rows do not.
        double dp0 = 0.0;
        double dp1 = 0.0;
        for (const auto& s : out->metrics.shards) {
            (s.rank < 2 ? dp0 : dp1) = std::max(s.rank < 2 ? dp0 : dp1, s.relError);
        }
        QVERIFY(dp0 > 1e3 * dp1);
        qInfo("bug demo: %zu divergent, ratio at the bug %g", r.summary.divergent, out->ratio);
    }
    void subtleBugNearTheFloorIsFlagged() {
        // A wrong scale of 2.4e-6 (20 float32 eps) on one rank's quarter of fc1's output:
        // about 8x that tensor's round-off floor, far below what fixed tolerances can see.
        const auto cand = scratch_ / "subtle";
        fs::copy(demoDir() / "clean" / "candidate", cand, fs::copy_options::recursive);
        QVERIFY(scaleDataset(cand / "rank-00000.h5",
                             "/nominal/iter_0/mb_0/layers.0.mlp.fc1/forward_output/0", 2.4e-6));
        QVERIFY(forgetChecksums(cand));
        const auto r = diffBundleDirs(demoDir() / "clean" / "reference", cand, noCache());
        const auto* t = find(r, "layers.0.mlp.fc1", TensorKind::ForwardOutput, 0, 0);
        QVERIFY(t);
        qInfo("subtle bug: error %g, floor %g, tolerance %g, ratio %g", t->metrics.relError,
              t->tolerance.floorMean, t->tolerance.value, t->ratio);
        QCOMPARE(t->status, Status::Divergent);
        QVERIFY(t->ratio < 10.0); // it really is near the floor
        QCOMPARE(r.firstForwardDivergence.value_or(""), std::string("layers.0.mlp.fc1"));
        QCOMPARE(r.module("layers.0.mlp.fc1")->origin, Origin::Introduced);
        QVERIFY(t->metrics.shards.front().relError > 0.0);
    }
    void cachePruneKeepsTheNewestEntries() {
        const auto dir = scratch_ / "prune";
        fs::create_directories(dir);
        const auto now = fs::file_time_type::clock::now();
        for (int i = 0; i < 40; ++i) {
            const auto file = dir / ("diff-" + std::to_string(i) + ".json");
            std::ofstream(file) << "{}";
            fs::last_write_time(file, now - std::chrono::minutes(40 - i)); // i = 39 is newest
        }
        std::ofstream(dir / "unrelated.txt") << "kept";
        pruneDiffCache(dir, 32);
        for (int i = 0; i < 40; ++i) {
            QCOMPARE(fs::exists(dir / ("diff-" + std::to_string(i) + ".json")), i >= 8);
        }
        QVERIFY(fs::exists(dir / "unrelated.txt"));
    }
    void jsonRoundTripsAndMarkdownNamesTheBug() {
        const auto r = diffBundleDirs(demoDir() / "bug" / "reference",
                                      demoDir() / "bug" / "candidate", noCache());
        const auto text = diffResultToJson(r);
        std::string error;
        const auto back = diffResultFromJson(text, error);
        QVERIFY2(back, error.c_str());
        QCOMPARE(diffResultToJson(*back), text);
        QCOMPARE(back->tensors.size(), r.tensors.size());
        const auto md = diffResultToMarkdown(r);
        QVERIFY(md.find("DIVERGENT") != std::string::npos);
        QVERIFY(md.find("`layers.1.mlp.fc2`") != std::string::npos);
        QVERIFY(!diffResultFromJson("{\"schema\": \"other\"}", error));
    }
    void cacheHitsAndInvalidates() {
        const auto ref = scratch_ / "cache-ref";
        const auto cand = scratch_ / "cache-cand";
        fs::copy(demoDir() / "clean" / "reference", ref, fs::copy_options::recursive);
        fs::copy(demoDir() / "clean" / "candidate", cand, fs::copy_options::recursive);
        // The rank file is rewritten below to play a changed run; without recorded checksums
        // the third diff must be divergent because of that change, not refused as damaged.
        QVERIFY(forgetChecksums(cand));
        qputenv("XDG_CACHE_HOME", (scratch_ / "xdg").string().c_str());
        DiffOptions options;
        using clock = std::chrono::steady_clock;
        auto t0 = clock::now();
        const auto first = diffBundleDirs(ref, cand, options);
        const auto cold = std::chrono::duration<double>(clock::now() - t0).count();
        const auto key = diffCacheKey(ref, cand, options);
        const auto entry = diffCacheFile(scratch_ / "xdg" / "ttrace", key);
        QVERIFY(fs::exists(entry));
        QVERIFY(!fs::exists(cand / ".ttrace-cache")); // never inside a bundle
        t0 = clock::now();
        std::size_t replayed = 0;
        const auto second =
            diffBundleDirs(ref, cand, options, {}, [&](const TensorResult&) { ++replayed; });
        const auto warm = std::chrono::duration<double>(clock::now() - t0).count();
        qInfo("cache: cold %.3f s, warm %.3f s", cold, warm);
        QCOMPARE(diffResultToJson(second), diffResultToJson(first));
        QCOMPARE(replayed, first.tensors.size());
        // Options are part of the key.
        DiffOptions other = options;
        other.tolerance.global = 1e-3;
        QVERIFY(diffCacheKey(ref, cand, other) != key);
        QVERIFY(!loadCachedDiff(diffCacheKey(ref, cand, other)));
        // A rank file that changes (here: a subtle bug written into it) misses the cache.
        QVERIFY(scaleDataset(cand / "rank-00000.h5",
                             "/nominal/iter_0/mb_0/layers.0.mlp.fc1/forward_output/0", 1e-3));
        QVERIFY(diffCacheKey(ref, cand, options) != key);
        const auto third = diffBundleDirs(ref, cand, options);
        QVERIFY(!third.summary.clean);
        QVERIFY2(third.diagnostics.empty(), dump(third).c_str());
        QVERIFY(third.summary.divergent > 0);
        // The key is the content: a time stamp alone that changes keeps it (the bytes are the
        // same), and the stored entry is found again.
        const auto key3 = diffCacheKey(ref, cand, options);
        QVERIFY(!key3.empty());
        fs::last_write_time(ref / "manifest.json",
                            fs::last_write_time(ref / "manifest.json") + std::chrono::seconds(5));
        QCOMPARE(diffCacheKey(ref, cand, options), key3);
        QVERIFY(loadCachedDiff(key3));
        QCOMPARE(storeCachedDiff(key3, third).parent_path(), scratch_ / "xdg" / "ttrace");
        QVERIFY(!fs::exists(cand / ".ttrace-cache"));
    }
    void fingerprintFindsTheEntryButNeverVouchesForIt() {
        const auto ref = scratch_ / "seen-ref";
        const auto cand = scratch_ / "seen-cand";
        fs::copy(demoDir() / "clean" / "reference", ref, fs::copy_options::recursive);
        fs::copy(demoDir() / "clean" / "candidate", cand, fs::copy_options::recursive);
        QVERIFY(forgetChecksums(cand)); // the edit below plays a changed run, not damage
        qputenv("XDG_CACHE_HOME", (scratch_ / "xdg-seen").string().c_str());
        const DiffOptions options;
        const auto first = diffBundleDirs(ref, cand, options);
        QVERIFY(first.summary.clean);
        const auto fingerprint = diffCacheFingerprint(ref, cand, options);
        const auto key = diffCacheKey(ref, cand, options);
        QVERIFY(!fingerprint.empty());
        // The engine pointed the pair's stamps at the entry it stored.
        auto seen = loadSeenDiff(fingerprint);
        QVERIFY(seen);
        QCOMPARE(seen->contentKey, key);
        QCOMPARE(diffResultToJson(seen->result), diffResultToJson(first));
        DiffOptions other = options;
        other.tolerance.global = 1e-3;
        QVERIFY(diffCacheFingerprint(ref, cand, other) != fingerprint);
        QVERIFY(!loadSeenDiff(diffCacheFingerprint(ref, cand, other)));

        // A value changed in place, the file's size and mtime restored.
        const auto rank = cand / "rank-00000.h5";
        const auto size = fs::file_size(rank);
        const auto mtime = fs::last_write_time(rank);
        QVERIFY(scaleDataset(rank, "/nominal/iter_0/mb_0/layers.0.mlp.fc1/forward_output/0", 1e-3));
        fs::last_write_time(rank, mtime);
        QCOMPARE(fs::file_size(rank), size);
        // The change time moved, so the stamps differ here; on a file system whose stamps do not
        // move (coarse times, a network mount) they would not: played by pointing the new stamps
        // at the old entry. The fingerprint then finds the old, clean answer...
        const auto changed = diffCacheFingerprint(ref, cand, options);
        QVERIFY(changed != fingerprint);
        rememberFingerprint(changed, key);
        seen = loadSeenDiff(changed);
        QVERIFY(seen);
        QVERIFY(seen->result.summary.clean);
        // ...and the content key rejects it: the bytes are not those of the entry.
        const auto nowKey = diffCacheKey(ref, cand, options);
        QVERIFY(!nowKey.empty());
        QVERIFY(nowKey != seen->contentKey);
        QVERIFY(!loadCachedDiff(nowKey));
        // The engine never answers from the fingerprint: it compares again, finds the change,
        // and points the stamps at the new entry.
        const auto again = diffBundleDirs(ref, cand, options);
        QVERIFY(!again.summary.clean);
        QVERIFY(again.summary.divergent > 0);
        seen = loadSeenDiff(diffCacheFingerprint(ref, cand, options));
        QVERIFY(seen);
        QCOMPARE(seen->contentKey, nowKey);
        QVERIFY(!seen->result.summary.clean);
    }
    void seenPointersArePruned() {
        qputenv("XDG_CACHE_HOME", (scratch_ / "xdg-prune-seen").string().c_str());
        for (std::size_t i = 0; i < kMaxSeenFingerprints + 5; ++i) {
            rememberFingerprint("fingerprint " + std::to_string(i), "key");
        }
        std::size_t pointers = 0;
        for (const auto& e : fs::directory_iterator(scratch_ / "xdg-prune-seen" / "ttrace")) {
            pointers += e.path().filename().string().starts_with("seen-") ? 1 : 0;
        }
        QCOMPARE(pointers, kMaxSeenFingerprints);
    }
    void unreadableBundlesAreDiagnosed() {
        const auto r =
            diffBundleDirs(scratch_ / "nope", demoDir() / "clean" / "candidate", noCache());
        QVERIFY(hasErrors(r.diagnostics));
        QVERIFY(!r.summary.clean);
        QVERIFY(r.tensors.empty());
        QVERIFY(r.diagnostics.front().location.starts_with("reference"));
    }
};

QTEST_GUILESS_MAIN(TestDiff)
#include "test_diff.moc"
