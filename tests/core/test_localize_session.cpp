// The localize run every front end uses (ttrace/replay/localize_session.h): what cannot be
// localized is said before any replay, in the words `ttrace localize` prints and the explorer
// shows (a reference bundle that cannot be opened; a walk over a diff with errors). No request
// reaches the agent in these cases, so the client points at a port nobody serves.
#include "localize_table.h"
#include "ttrace/replay/localize_session.h"
#include "ttrace/replay/localize_text.h"

#include <QtTest>

#include <filesystem>
#include <sstream>

using namespace ttrace;
using namespace ttrace::replay;
namespace fs = std::filesystem;

namespace {

fs::path demoDir() {
    return qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
}

ClientOptions nobodyServes() {
    ClientOptions o;
    o.endpoint = "tcp://127.0.0.1:9"; // discard: never a replay agent
    o.token = std::string(64, 'a');
    return o;
}

} // namespace

class TestLocalizeSession : public QObject {
    Q_OBJECT
private slots:
    void referenceThatCannotBeOpenedIsNamed() {
        AgentClient client(nobodyServes());
        LocalizeRequest request;
        request.referenceBundle = fs::temp_directory_path() / "ttrace-no-such-reference";
        request.diff = std::make_shared<const DiffResult>();
        int verdicts = 0;
        LocalizeCallbacks callbacks;
        callbacks.verdict = [&verdicts](const ModuleVerdict&) { ++verdicts; };
        const auto r = localize(client, AgentInfo{}, request, {}, callbacks);
        QVERIFY(!r.problems.empty());
        const auto& last = r.problems.back();
        QCOMPARE(last.code, DiagnosticCode::BadReference);
        QCOMPARE(last.message, std::string("the reference bundle cannot be opened for judging"));
        QCOMPARE(last.location, request.referenceBundle.string());
        // What the open found comes first, said of the reference.
        QVERIFY(r.problems.size() >= 2);
        QVERIFY(r.problems.front().location.starts_with("reference "));
        QCOMPARE(verdicts, 0);
        QVERIFY(!r.cancelled);
        // The last line says why, never that nothing diverges.
        const auto line = localizeVerdictLine(r);
        QVERIFY2(line.starts_with("STOPPED: not localized: the replays stopped at an error (") &&
                     line.find(r.problems.front().message) != std::string::npos,
                 line.c_str());
        // `ttrace localize` prints each problem once, with its severity said once.
        std::ostringstream printed;
        cli::LocalizeTable(printed).conclusion(r);
        const std::string text = printed.str();
        QVERIFY2(text.find("error: error") == std::string::npos, text.c_str());
        for (const auto& p : r.problems) {
            QVERIFY2(text.find("\n" + p.toString() + "\n") != std::string::npos, text.c_str());
        }
        QVERIFY2(text.ends_with("\n" + line + "\n"), text.c_str());
    }
    void walkOverDiffWithErrorsIsRefused() {
        QVERIFY2(fs::exists(demoDir() / "clean" / "reference" / "manifest.json"),
                 "run the demo_bundles fixture first");
        AgentClient client(nobodyServes());
        auto diff = std::make_shared<DiffResult>();
        diff->summary.candidateDir = (demoDir() / "clean" / "candidate").string();
        diff->diagnostics.push_back(
            makeError(DiagnosticCode::MissingRank, "candidate", "rank 3 is missing"));
        LocalizeRequest request;
        request.referenceBundle = demoDir() / "clean" / "reference";
        request.diff = diff;
        const auto r = localize(client, AgentInfo{}, request);
        QCOMPARE(r.problems.size(), std::size_t{1});
        QCOMPARE(r.problems.front().code, DiagnosticCode::BadBundles);
        QCOMPARE(r.problems.front().location, diff->summary.candidateDir);
        QVERIFY(r.problems.front().message.ends_with("no reliable divergence to localize"));
        QVERIFY(r.verdicts.empty());
        QVERIFY(!r.start);
    }
    void expectedReplaysCountsNamedSuspects() {
        LocalizeRequest request;
        QCOMPARE(expectedReplays(request), 0);
        request.suspects = {Suspect{"layers.0", 0, 0, LocalizePhase::Forward, 0.0},
                            Suspect{"layers.1", 0, 0, LocalizePhase::Forward, 0.0}};
        QCOMPARE(expectedReplays(request), 2);
    }
};

QTEST_GUILESS_MAIN(TestLocalizeSession)
#include "test_localize_session.moc"
