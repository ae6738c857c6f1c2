// Whether an agent serves the bundles shown, by capture id (bundles move between hosts, so a
// path says nothing): a copy matches, another capture does not, older bundles fall back to the
// manifest's creation time, and a side that cannot say which capture it holds is "unknown".
#include "ttrace/replay/bundle_match.h"

#include <QtTest>

using namespace ttrace;
using namespace ttrace::replay;

namespace {

Manifest manifest(const std::string& id, const std::string& created) {
    Manifest m;
    m.captureId = id;
    m.created = created;
    return m;
}

AgentInfo agent(const BundleIdentity& candidate, const BundleIdentity& reference) {
    AgentInfo a;
    a.bundle = "/gpu/cand";
    a.reference = "/gpu/ref";
    a.candidateIdentity = candidate;
    a.referenceIdentity = reference;
    return a;
}

} // namespace

class TestBundleMatch : public QObject {
    Q_OBJECT
private slots:
    void aCopyOfTheSameCapturesMatches() {
        const auto a = agent({"c1", "t1"}, {"r1", "t0"});
        QVERIFY(!agentBundleMismatch(a, manifest("r1", "t0"), manifest("c1", "t1")));
    }

    void anotherCaptureIsRefusedNamingBoth() {
        const auto a = agent({"c2aaaaaaaaaa", "t2"}, {"r1", "t0"});
        const auto m = agentBundleMismatch(a, manifest("r1", "t0"), manifest("c1bbbbbbbbbb", "t1"));
        QVERIFY(m);
        QCOMPARE(m->code, BundleMatch::OtherCapture);
        QVERIFY2(m->message.find("another candidate (capture c2aaaaaa, /gpu/cand") !=
                         std::string::npos &&
                     m->message.find("(capture c1bbbbbb)") != std::string::npos,
                 m->message.c_str());
        // The reference counts too: it feeds every replay.
        const auto r = agentBundleMismatch(agent({"c1", "t1"}, {"r9", "t9"}), manifest("r1", "t0"),
                                           manifest("c1", "t1"));
        QVERIFY(r && r->message.find("another reference") != std::string::npos);
    }

    void olderBundlesMatchByCreationTime() {
        const auto a = agent({"", "2026-11-20T21:00:00Z"}, {"", "2026-11-20T20:00:00Z"});
        QVERIFY(!agentBundleMismatch(a, manifest("", "2026-11-20T20:00:00Z"),
                                     manifest("", "2026-11-20T21:00:00Z")));
        const auto m = agentBundleMismatch(a, manifest("", "2026-11-20T20:00:00Z"),
                                           manifest("", "2026-11-21T08:00:00Z"));
        QVERIFY(m && m->code == BundleMatch::OtherCapture);
    }

    void anAgentThatCannotSayIsUnknown() {
        const auto m =
            agentBundleMismatch(agent({}, {}), manifest("r1", "t0"), manifest("c1", "t1"));
        QVERIFY(m);
        QCOMPARE(m->code, BundleMatch::Unknown);
        QVERIFY(m->message.find("restart it") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestBundleMatch)
#include "test_bundle_match.moc"
