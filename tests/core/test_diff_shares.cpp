// A diff split into shares (as `ttrace-mpi` runs it: each share compared alone, its results
// sent through the wire encoding, the analysis finished from all of them) must give the report
// a diff in one process gives, byte for byte; the split must cover every tensor once, keep the
// training state's tensors of all iterations together and balance the bytes.
#include "ttrace/compare/diff_parts.h"
#include "ttrace/compare/report_json.h"
#include "ttrace/compare/tensor_shard_plan.h"
#include "ttrace/compare/tensor_wire.h"
#include "ttrace/io/shared_checksums.h"

#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

fs::path demoDir() {
    return qEnvironmentVariable("TTRACE_DEMO_DIR").toStdString();
}

DiffOptions noCache() {
    DiffOptions o;
    o.useCache = false;
    return o;
}

// The share's results after a trip through the wire encoding.
ShareResult throughWire(const ShareResult& share) {
    std::string error;
    auto back = decodeShareResult(encodeShareResult(share), error);
    if (!back) {
        qFatal("wire: %s", error.c_str());
    }
    return std::move(*back);
}

// The diff finished from `parts` shares, each compared on its own.
DiffResult diffInShares(const OpenedPair& pair, int parts) {
    const auto& ref = *pair.reference.bundle;
    const auto& cand = *pair.candidate.bundle;
    const auto ids = diffTensorIds(ref, cand, pair.options);
    std::vector<TensorResult> tensors(ids.size());
    int rank = 0;
    for (const auto& share : planTensorShares(ref, cand, ids, parts)) {
        auto part = compareTensorSubset(ref, cand, pair.options, ids, share.indices);
        const auto sent = throughWire({rank++, part.indices, std::move(part.tensors), false, {}});
        for (std::size_t k = 0; k < sent.indices.size(); ++k) {
            tensors[sent.indices[k]] = sent.tensors[k];
        }
    }
    auto diff = finishDiff(ref, cand, pair.options, std::move(tensors), false, {});
    addOpeningDiagnostics(pair.diagnostics, diff);
    return diff;
}

} // namespace

class TestDiffShares : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(demoDir() / "bug" / "candidate" / "manifest.json"),
                 "run the demo_bundles fixture first");
    }

    void sharesCoverEveryTensorOnceAndKeepStatesTogether() {
        const auto pair = openDiffPair(demoDir() / "bug" / "reference",
                                       demoDir() / "bug" / "candidate", noCache(), {});
        QVERIFY(!pair.early);
        const auto& ref = *pair.reference.bundle;
        const auto& cand = *pair.candidate.bundle;
        const auto ids = diffTensorIds(ref, cand, pair.options);
        QVERIFY(ids.size() > 100);
        std::int64_t total = 0, largestTensor = 0;
        for (const auto& id : ids) {
            const auto bytes = comparisonBytes(ref, cand, id);
            QVERIFY(bytes > 0);
            total += bytes;
            largestTensor = std::max(largestTensor, bytes);
        }
        for (int parts = 1; parts <= 5; ++parts) {
            const auto shares = planTensorShares(ref, cand, ids, parts);
            QCOMPARE(shares.size(), static_cast<std::size_t>(parts));
            std::vector<int> owner(ids.size(), -1);
            std::map<std::tuple<std::string, TensorKind, std::string>, int> stateOwner;
            std::int64_t sum = 0;
            for (int s = 0; s < parts; ++s) {
                const auto& share = shares[static_cast<std::size_t>(s)];
                QVERIFY(std::is_sorted(share.indices.begin(), share.indices.end()));
                sum += share.bytes;
                for (const auto i : share.indices) {
                    QCOMPARE(owner[i], -1);
                    owner[i] = s;
                    if (const auto state = carriedStateKind(ids[i].kind)) {
                        const auto [it, fresh] =
                            stateOwner.try_emplace({ids[i].module, *state, ids[i].index}, s);
                        QCOMPARE(it->second, s); // every iteration's state on one share
                    }
                }
                // Greedy largest-first: no share exceeds the mean by more than a group's bytes
                // (a group is at most the iterations' tensors of one state).
                QVERIFY2(share.bytes <= total / parts + 4 * largestTensor,
                         qPrintable(QString("share %1 of %2: %3 bytes of %4")
                                        .arg(s)
                                        .arg(parts)
                                        .arg(share.bytes)
                                        .arg(total)));
            }
            QCOMPARE(sum, total);
            QVERIFY(std::find(owner.begin(), owner.end(), -1) == owner.end());
        }
    }

    void finishedFromSharesIsTheSameReport_data() {
        QTest::addColumn<int>("parts");
        QTest::addColumn<int>("iteration"); // -1: all
        QTest::newRow("1 share") << 1 << -1;
        QTest::newRow("2 shares") << 2 << -1;
        QTest::newRow("3 shares") << 3 << -1;
        QTest::newRow("7 shares") << 7 << -1;
        // Iteration 1 alone: each share measures the states of iteration 0 it inherits.
        QTest::newRow("3 shares, iteration 1") << 3 << 1;
    }
    void finishedFromSharesIsTheSameReport() {
        QFETCH(int, parts);
        QFETCH(int, iteration);
        auto options = noCache();
        if (iteration >= 0) {
            options.iteration = iteration;
        }
        const auto refDir = demoDir() / "bug" / "reference";
        const auto candDir = demoDir() / "bug" / "candidate";
        const auto whole = diffResultToJson(diffBundleDirs(refDir, candDir, options));
        const auto pair = openDiffPair(refDir, candDir, options, {});
        QVERIFY(!pair.early);
        const auto split = diffResultToJson(diffInShares(pair, parts));
        QVERIFY(whole.find("\"carried_floor_mean\"") != std::string::npos);
        QCOMPARE(split.size(), whole.size());
        QVERIFY(split == whole);
    }

    // Another process's checksum is taken only for a file unchanged since it was read.
    void checksumsAdoptedOnlyForUnchangedFiles() {
        QTemporaryDir dir;
        const fs::path file = dir.filePath("rank-00000.h5").toStdString();
        fs::copy_file(demoDir() / "bug" / "candidate" / "rank-00000.h5", file);
        const auto sum = checksumToShare(file);
        QVERIFY(sum);
        QCOMPARE(sum->size, static_cast<std::int64_t>(fs::file_size(file)));
        QVERIFY(adoptChecksum(*sum));
        auto moved = *sum;
        moved.mtimeNs += 1;
        QVERIFY(!adoptChecksum(moved));
        std::ofstream(file, std::ios::app) << 'x';
        QVERIFY(!adoptChecksum(*sum)); // grown: read again, not trusted
        moved = *sum;
        moved.path = dir.filePath("nope.h5").toStdString();
        QVERIFY(!adoptChecksum(moved));
    }

    void wireRefusesWhatItDidNotWrite() {
        std::string error;
        QVERIFY(!decodeShareResult({0x01, 0x02, 0x03}, error));
        QVERIFY(!error.empty());
        // A share from another wire version is refused, not misread.
        auto bytes = encodeShareResult({3, {}, {}, false, {}});
        QVERIFY(decodeShareResult(bytes, error));
        const auto version =
            std::find(bytes.begin(), bytes.end(), static_cast<std::uint8_t>(kTensorWireVersion));
        QVERIFY(version != bytes.end());
        *version = static_cast<std::uint8_t>(kTensorWireVersion + 1);
        QVERIFY(!decodeShareResult(bytes, error));
    }
};

QTEST_GUILESS_MAIN(TestDiffShares)
#include "test_diff_shares.moc"
