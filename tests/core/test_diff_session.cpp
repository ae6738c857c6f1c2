// The diff session (ttrace/session/diff_session.h) on the demo bundles, as the explorer and the CLI
// see it: the order of what a listener is told on a cold run, from the summary cache (provisional,
// then the same object as final), when the bytes changed since (provisional, stale, a fresh
// comparison), for a refused pair, and when the listener cancels.
#include "ttrace/compare/cache_fingerprint.h"
#include "ttrace/compare/diff_cache.h"
#include "ttrace/compare/report_json.h"
#include "ttrace/session/diff_session.h"

#include "bundle_edits.h"

#include <QtTest>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

fs::path demoDir() {
    return qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
}

// Records every call as one word; tensors count once per run of them ("tensors").
class Recorder final : public DiffSessionListener {
public:
    bool provisionalWanted = true;
    // Returns false (cancels) from the progress call it is given; none: never.
    std::function<bool(std::string_view what)> cancelAt;

    std::vector<std::string> events;
    std::size_t tensors = 0;
    std::shared_ptr<const DiffResult> provisional, final;
    Diagnostics problems;

    bool wantsProvisional() const override { return provisionalWanted; }
    void manifestsRead(const Manifest* reference, const Manifest* candidate) override {
        add(reference && candidate ? "manifests" : "manifests-missing");
    }
    bool progress(double, std::string_view what) override { return !cancelAt || !cancelAt(what); }
    void provisionalResult(const std::shared_ptr<const DiffResult>& result) override {
        provisional = result;
        add("provisional");
    }
    void provisionalStale() override { add("stale"); }
    void bundlesOpened(const Manifest* reference, const Manifest* candidate,
                       const Diagnostics& found) override {
        problems = found;
        add(reference && candidate ? "opened" : "unopened");
    }
    void tensorCompared(const TensorResult&) override {
        const std::lock_guard lock(mutex_);
        if (tensors++ == 0) {
            events.emplace_back("tensors");
        }
    }
    void finalResult(const std::shared_ptr<const DiffResult>& result) override {
        final = result;
        add("final");
    }
    void cancelled() override { add("cancelled"); }

private:
    void add(const char* event) {
        const std::lock_guard lock(mutex_);
        events.emplace_back(event);
    }
    std::mutex mutex_;
};

using Events = std::vector<std::string>;

std::string joined(const Events& events) {
    std::string text;
    for (const auto& e : events) {
        text += (text.empty() ? "" : ", ") + e;
    }
    return text;
}

// Records `torch` as the torch version in the environment section of `bundle`'s manifest.
void recordTorch(const fs::path& bundle, const std::string& torch) {
    const auto path = bundle / "manifest.json";
    auto manifest = nlohmann::json::parse(std::ifstream(path));
    manifest["environment"] = {{"versions", {{"torch", torch}}}};
    std::ofstream(path) << manifest.dump(2);
}

bool hasCode(const Diagnostics& d, DiagnosticCode code) {
    return std::any_of(d.begin(), d.end(), [&](const Diagnostic& x) { return x.code == code; });
}

} // namespace

class TestDiffSession : public QObject {
    Q_OBJECT
private:
    fs::path scratch_, ref_, cand_;

private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(demoDir() / "clean" / "candidate" / "manifest.json"),
                 "run the demo_bundles fixture first");
        scratch_ = fs::temp_directory_path() /
                   ("ttrace-test-session-" + std::to_string(QCoreApplication::applicationPid()));
        fs::remove_all(scratch_);
        fs::create_directories(scratch_);
        ref_ = scratch_ / "ref";
        cand_ = scratch_ / "cand";
        fs::copy(demoDir() / "clean" / "reference", ref_, fs::copy_options::recursive);
        fs::copy(demoDir() / "clean" / "candidate", cand_, fs::copy_options::recursive);
        // Rewritten below to play a changed run: a changed byte must read as a changed run,
        // not as a damaged file.
        QVERIFY(ttrace::test::forgetChecksums(cand_));
        qputenv("XDG_CACHE_HOME", (scratch_ / "xdg").string().c_str());
    }
    void cleanupTestCase() { fs::remove_all(scratch_); }

    // Runs in order: each one leaves the cache as the next expects it.
    void coldRunComparesThenGivesTheFinalResult() {
        Recorder r;
        const auto result = runDiffSession(ref_, cand_, DiffOptions{}, r);
        QVERIFY2(r.events == (Events{"manifests", "opened", "tensors", "final"}),
                 joined(r.events).c_str());
        QCOMPARE(r.final.get(), result.get());
        QVERIFY(!r.provisional);
        QVERIFY(result->summary.clean);
        QCOMPARE(r.tensors, result->tensors.size());
        QVERIFY(r.tensors > 0);
    }
    void cachedRunIsProvisionalThenTheSameObjectAsFinal() {
        Recorder r;
        const auto result = runDiffSession(ref_, cand_, DiffOptions{}, r);
        // Shown before the check; no tensor streams in, the whole result is already there.
        QVERIFY2(r.events == (Events{"manifests", "provisional", "opened", "final"}),
                 joined(r.events).c_str());
        QVERIFY(r.provisional);
        QCOMPARE(r.final.get(), r.provisional.get());
        QVERIFY(result->summary.clean);
    }
    void printerWithoutProvisionalGetsTheCachedResultTensorByTensor() {
        Recorder r;
        r.provisionalWanted = false;
        const auto result = runDiffSession(ref_, cand_, DiffOptions{}, r);
        QVERIFY2(r.events == (Events{"manifests", "opened", "tensors", "final"}),
                 joined(r.events).c_str());
        QCOMPARE(r.tensors, result->tensors.size());
    }
    void cancelDuringTheCheckEndsWithCancelled() {
        Recorder r;
        r.cancelAt = [](std::string_view what) { return what.find("checking") != what.npos; };
        runDiffSession(ref_, cand_, DiffOptions{}, r);
        QVERIFY2(r.events == (Events{"manifests", "provisional", "cancelled"}),
                 joined(r.events).c_str());
        QVERIFY(!r.final);
    }
    void changedBytesMakeTheProvisionalStale() {
        const auto oldKey = diffCacheKey(ref_, cand_, DiffOptions{});
        QVERIFY(!oldKey.empty());
        QVERIFY(ttrace::test::scaleDataset(cand_ / "rank-00000.h5",
                                           "/nominal/iter_0/mb_0/layers.0.mlp.fc1/forward_output/0",
                                           1e-3));
        // The change time moved, so the stamps differ here; on a file system whose stamps do
        // not move (coarse times, a network mount) they would not: played by pointing the new
        // stamps at the old entry.
        rememberFingerprint(diffCacheFingerprint(ref_, cand_, DiffOptions{}), oldKey);
        Recorder r;
        const auto result = runDiffSession(ref_, cand_, DiffOptions{}, r);
        QVERIFY2(r.events ==
                     (Events{"manifests", "provisional", "stale", "opened", "tensors", "final"}),
                 joined(r.events).c_str());
        QVERIFY(r.final.get() != r.provisional.get());
        QVERIFY(r.provisional->summary.clean);
        QVERIFY(!result->summary.clean);
        QVERIFY(result->summary.divergent > 0);
    }
    void cancelWhileComparingEndsWithCancelled() {
        DiffOptions options;
        options.useCache = false;
        Recorder r;
        std::size_t seen = 0;
        // The first progress report of the comparison itself (after the 20% of the open).
        r.cancelAt = [&seen](std::string_view) { return ++seen > 40; };
        const auto result = runDiffSession(ref_, cand_, options, r);
        QCOMPARE(r.events.back(), std::string("cancelled"));
        QCOMPARE(r.events.front(), std::string("manifests"));
        QVERIFY(!r.final);
        QVERIFY(result->cancelled);
    }
    void refusedPairIsNeverShownFromTheCache() {
        Recorder r;
        // The wrong order: refused from the manifests alone, before any cache or rank file.
        const auto result = runDiffSession(cand_, ref_, DiffOptions{}, r);
        QVERIFY2(r.events == (Events{"manifests", "opened", "final"}), joined(r.events).c_str());
        QVERIFY(hasErrors(r.problems));
        QVERIFY(result->tensors.empty());
        QVERIFY(!result->summary.clean);
    }
    // A verdict note (what differs between the environments, drift) belongs to the result: a
    // pair reopened from the cache lists it there, never among the problems met opening it.
    void cachedVerdictNotesAreNoOpeningProblems() {
        const auto ref = scratch_ / "env-ref";
        const auto cand = scratch_ / "env-cand";
        fs::copy(demoDir() / "clean" / "reference", ref, fs::copy_options::recursive);
        fs::copy(demoDir() / "clean" / "candidate", cand, fs::copy_options::recursive);
        recordTorch(ref, "2.13.0");
        recordTorch(cand, "2.14.0");
        Recorder cold;
        const auto fresh = runDiffSession(ref, cand, DiffOptions{}, cold);
        QVERIFY(hasCode(fresh->diagnostics, DiagnosticCode::EnvironmentDiffers));
        QVERIFY(!hasCode(cold.problems, DiagnosticCode::EnvironmentDiffers));
        for (const bool provisional : {true, false}) {
            Recorder cached;
            cached.provisionalWanted = provisional;
            const auto result = runDiffSession(ref, cand, DiffOptions{}, cached);
            QVERIFY2(std::find(cached.events.begin(), cached.events.end(), "provisional") !=
                             cached.events.end() ||
                         !provisional,
                     joined(cached.events).c_str());
            QVERIFY(hasCode(result->diagnostics, DiagnosticCode::EnvironmentDiffers));
            QVERIFY(!hasCode(cached.problems, DiagnosticCode::EnvironmentDiffers));
        }
    }
    void missingBundleIsUnopenedAndFinal() {
        Recorder r;
        const auto result = runDiffSession(scratch_ / "nope", cand_, DiffOptions{}, r);
        QVERIFY2(r.events == (Events{"manifests-missing", "unopened", "final"}),
                 joined(r.events).c_str());
        QVERIFY(hasErrors(result->diagnostics));
    }
};

QTEST_GUILESS_MAIN(TestDiffSession)
#include "test_diff_session.moc"
