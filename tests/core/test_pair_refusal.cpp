// Which pairs are compared: a candidate capture given as the reference is refused from the
// manifests alone (no rank file is read, hashed for the cache or compared), unless the user
// chose it as the reference, and then its verdicts rest on the analytic bound and say so. Each
// side's layout is named in the result and survives the JSON round trip. On the demo bundles
// (python -m ttrace_testing.demo_bundles): a one-process reference and two TP2 x DP2 candidates.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/compare/diff_parts.h"
#include "ttrace/compare/report_json.h"
#include "ttrace/compare/run_layout.h"
#include "ttrace/report/report_markdown.h"

#include <QtTest>

#include <algorithm>
#include <filesystem>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

fs::path demoDir() {
    return qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
}

DiffOptions noCache(bool referenceIsCandidate = false) {
    DiffOptions o;
    o.useCache = false;
    o.referenceIsCandidate = referenceIsCandidate;
    return o;
}

std::vector<std::string> codes(const Diagnostics& diagnostics) {
    std::vector<std::string> out;
    for (const auto& d : diagnostics) {
        out.push_back(d.code);
    }
    return out;
}

bool has(const Diagnostics& diagnostics, const std::string& code) {
    const auto all = codes(diagnostics);
    return std::find(all.begin(), all.end(), code) != all.end();
}

} // namespace

class TestPairRefusal : public QObject {
    Q_OBJECT
private:
    fs::path scratch_;
    fs::path gutted_; // the clean candidate's manifest, its rank files gone

private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(demoDir() / "clean" / "candidate" / "manifest.json"),
                 "run the demo_bundles fixture first");
        scratch_ = fs::temp_directory_path() / ("ttrace-test-pair-refusal-" +
                                                std::to_string(QCoreApplication::applicationPid()));
        fs::remove_all(scratch_);
        gutted_ = scratch_ / "candidate-manifest-only";
        fs::create_directories(gutted_);
        fs::copy_file(demoDir() / "clean" / "candidate" / "manifest.json",
                      gutted_ / "manifest.json");
    }
    void cleanupTestCase() { fs::remove_all(scratch_); }

    void candidateAsReferenceIsRefusedBeforeAnyRankFileIsRead() {
        // Its rank files are gone: any open, hash or comparison would report them missing.
        int progressCalls = 0;
        int opened = 0;
        DiffCallbacks cb;
        cb.progress = [&](double, std::string_view) {
            ++progressCalls;
            return true;
        };
        cb.onOpened = [&](const Manifest* ref, const Manifest* cand, const Diagnostics& problems) {
            ++opened;
            QVERIFY(ref && cand);
            QCOMPARE(ref->role, std::string("candidate"));
            QCOMPARE(codes(problems), std::vector<std::string>{"role-mismatch"});
        };
        DiffOptions cached = noCache();
        cached.useCache = true; // the cache's hashing of every byte is skipped too
        const auto r = diffBundleDirs(gutted_, demoDir() / "bug" / "candidate", cached, cb);
        QCOMPARE(codes(r.diagnostics), std::vector<std::string>{"role-mismatch"});
        QVERIFY(r.diagnostics.front().message.find("--reference-is-candidate") !=
                std::string::npos);
        QCOMPARE(r.summary.compared, std::size_t{0});
        QVERIFY(r.tensors.empty() && !r.summary.clean);
        QCOMPARE(progressCalls, 0);
        QCOMPARE(opened, 1);
    }

    void thePartsRefuseAsTheWholeDoes() {
        // The MPI front end's path: the cache is not consulted and nothing is opened.
        const auto options = noCache();
        DiffOptions cached = options;
        cached.useCache = true;
        QVERIFY(!cachedDiff(gutted_, demoDir() / "bug" / "candidate", cached, {}));
        const auto pair = openDiffPair(gutted_, demoDir() / "bug" / "candidate", options, {});
        QVERIFY(pair.early);
        QVERIFY(!pair.reference.bundle && !pair.candidate.bundle);
        QCOMPARE(codes(pair.early->diagnostics), std::vector<std::string>{"role-mismatch"});
    }

    void swappedPairIsRefusedEvenWhenTheCandidateIsChosen() {
        const auto r = diffBundleDirs(gutted_, demoDir() / "clean" / "reference", noCache(true),
                                      DiffCallbacks{});
        QCOMPARE(codes(r.diagnostics), std::vector<std::string>{"swapped-roles"});
        QVERIFY(r.tensors.empty());
    }

    void chosenCandidateReferenceRestsOnTheAnalyticBound() {
        const auto r =
            diffBundleDirs(demoDir() / "clean" / "candidate", demoDir() / "bug" / "candidate",
                           noCache(true), DiffCallbacks{});
        QVERIFY(has(r.diagnostics, "reference-is-candidate"));
        QVERIFY(!has(r.diagnostics, "role-mismatch"));
        QCOMPARE(r.summary.referenceRole, std::string("candidate"));
        QCOMPARE(r.summary.perturbedVariants, std::size_t{0});
        QVERIFY(r.summary.compared > 0);
        QVERIFY2(r.summary.divergent > 0, "the injected bug is still caught");
        for (const auto& t : r.tensors) {
            if (t.status != Status::Invalid && t.status != Status::Missing &&
                t.tolerance.source != ToleranceSource::None) {
                QVERIFY2(t.tolerance.source != ToleranceSource::Empirical, t.id.path().c_str());
            }
        }
        const auto markdown = diffResultToMarkdown(r);
        QVERIFY2(markdown.find("captured as a candidate: analytic bound only") != std::string::npos,
                 markdown.c_str());
        // A 4-rank reference shares the candidate's code: the report says what it cannot show.
        QVERIFY2(markdown.find("| blind spot | " + distributedReferenceNote(4)) !=
                     std::string::npos,
                 markdown.c_str());
    }

    void bothLayoutsAreNamedAndRoundTrip() {
        const auto r =
            diffBundleDirs(demoDir() / "clean" / "reference", demoDir() / "clean" / "candidate",
                           noCache(), DiffCallbacks{});
        QCOMPARE(r.summary.referenceLayout, std::string("single process"));
        QCOMPARE(r.summary.candidateLayout, std::string("TP2 x DP2, 4 ranks"));
        QVERIFY(diffResultToMarkdown(r).find("blind spot") == std::string::npos);
        QCOMPARE(r.summary.referenceRole, std::string("reference"));
        std::string error;
        const auto back = diffResultFromJson(diffResultToJson(r), error);
        QVERIFY2(back, error.c_str());
        QCOMPARE(back->summary.referenceLayout, r.summary.referenceLayout);
        QCOMPARE(back->summary.candidateLayout, r.summary.candidateLayout);
        QCOMPARE(back->summary.referenceRole, r.summary.referenceRole);
        const auto markdown = diffResultToMarkdown(r);
        QVERIFY(markdown.find("(single process, ") != std::string::npos);
        QVERIFY(markdown.find("(TP2 x DP2, 4 ranks)") != std::string::npos);
    }

    void layoutTextNamesEveryParallelSize_data() {
        QTest::addColumn<int>("world");
        QTest::addColumn<int>("tp");
        QTest::addColumn<int>("cp");
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("dp");
        QTest::addColumn<QString>("expected");
        QTest::newRow("single") << 1 << 1 << 1 << 1 << 1 << "single process";
        QTest::newRow("tp2") << 2 << 2 << 1 << 1 << 1 << "TP2, 2 ranks";
        QTest::newRow("tp2xcp2xpp2") << 8 << 2 << 2 << 2 << 1 << "TP2 x CP2 x PP2, 8 ranks";
        QTest::newRow("dp4") << 4 << 1 << 1 << 1 << 4 << "DP4, 4 ranks";
        QTest::newRow("sizes not recorded") << 4 << 0 << 0 << 0 << 0 << "4 ranks";
    }
    void layoutTextNamesEveryParallelSize() {
        QFETCH(int, world);
        QFETCH(int, tp);
        QFETCH(int, cp);
        QFETCH(int, pp);
        QFETCH(int, dp);
        QFETCH(QString, expected);
        Manifest m;
        m.worldSize = world;
        if (tp > 0) {
            m.parallel = {{"tp", tp}, {"cp", cp}, {"pp", pp}, {"dp", dp}, {"ep", 1}, {"vpp", 1}};
        }
        QCOMPARE(QString::fromStdString(layoutText(m)), expected);
    }
};

QTEST_GUILESS_MAIN(TestPairRefusal)
#include "test_pair_refusal.moc"
