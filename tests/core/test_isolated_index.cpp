// Rank files are indexed by libhdf5 in a child process (ttrace-index). A file that crashes or
// hangs libhdf5 must come back as a typed error naming the file, in bounded time; a good file
// must give exactly the facts the same extractor gives in-process; the wire format must reject
// truncated or mangled output without crashing or allocating from a declared count.
#include "io/child_process.h"
#include "io/h5_handle.h"
#include "io/index_wire.h"
#include "io/isolated_index.h"
#include "io/rank_extract.h"
#include "ttrace/io/bundle.h"
#include "ttrace/merge/validator.h"

#include <QtTest>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TTRACE_TEST_ASAN 1
#endif
#endif

// Under ASan the child's libhdf5 memcpy goes through ASan's interceptor, which may report the
// wild access itself (exit status 1) before the segfault: still a typed error, not a crash.
bool crashCode(const std::string& code) {
#ifdef TTRACE_TEST_ASAN
    return code == "index-crashed" || code == "index-failed";
#else
    return code == "index-crashed";
#endif
}

fs::path fixtures() {
    return qEnvironmentVariable("TTRACE_FIXTURES_DIR").toStdString();
}
fs::path regressions() {
    return TTRACE_RANK_FILE_REGRESSIONS;
}

std::vector<fs::path> goodRankFiles() {
    std::vector<fs::path> files;
    for (const char* bundle : {"valid", "valid-reference", "roundtrip"}) {
        for (const auto& item : fs::directory_iterator(fixtures() / bundle)) {
            if (item.path().extension() == ".h5") {
                files.push_back(item.path());
            }
        }
    }
    return files;
}

std::string inProcess(const fs::path& file) {
    const std::lock_guard lock(h5::apiMutex());
    return encodeRankFacts(extractRankFacts(file));
}

std::vector<std::byte> readWithHdf5(const fs::path& file, const ShardRef& shard) {
    const std::lock_guard lock(h5::apiMutex());
    h5::File handle(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    h5::Dataset dataset(H5Dopen2(handle.get(), shard.datasetPath.c_str(), H5P_DEFAULT));
    h5::Datatype type(H5Dget_type(dataset.get()));
    std::vector<std::byte> raw(static_cast<std::size_t>(shard.bytes()));
    if (!raw.empty()) {
        H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data());
    }
    return raw;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

class TestIsolatedIndex : public QObject {
    Q_OBJECT
private slots:
    void goodFileSameFactsAsInProcess() {
        const auto files = goodRankFiles();
        QVERIFY(files.size() >= 4);
        for (const auto& file : files) {
            const auto child =
                runChild(indexHelperPath(), {file.string()}, 1 << 26, std::chrono::seconds(60));
            QCOMPARE(child.outcome, ChildResult::Outcome::Exited);
            QCOMPARE(child.status, 0);
            QVERIFY2(child.output == inProcess(file), file.c_str());
            const auto isolated =
                indexInChild(file, static_cast<std::int64_t>(fs::file_size(file)));
            QVERIFY2(isolated.facts, isolated.message.c_str());
            QVERIFY(!isolated.facts->datasets.empty());
            QCOMPARE(encodeRankFacts(*isolated.facts), child.output);
        }
    }

    void crashingFileIsTypedError() {
        for (const char* name : {"libhdf5-segv-1", "libhdf5-segv-2"}) {
            const auto file = regressions() / name;
            const auto isolated =
                indexInChild(file, static_cast<std::int64_t>(fs::file_size(file)));
            QVERIFY(!isolated.facts);
            QVERIFY2(crashCode(isolated.code), isolated.message.c_str());
            QVERIFY2(isolated.message.find(file.string()) != std::string::npos,
                     isolated.message.c_str());
            QVERIFY2(
                isolated.message.find(isolated.code == "index-crashed" ? "signal" : "status") !=
                    std::string::npos,
                isolated.message.c_str());
        }
    }

    void loopingFileTimesOut() {
        qputenv("TTRACE_INDEX_TIMEOUT_S", "1.5");
        for (const char* name : {"libhdf5-loop-1", "libhdf5-loop-2"}) {
            const auto file = regressions() / name;
            const auto start = std::chrono::steady_clock::now();
            const auto isolated =
                indexInChild(file, static_cast<std::int64_t>(fs::file_size(file)));
            const double took = secondsSince(start);
            QVERIFY(!isolated.facts);
            QCOMPARE(isolated.code, std::string("index-timeout"));
            QVERIFY2(isolated.message.find(file.string()) != std::string::npos,
                     isolated.message.c_str());
            QVERIFY2(took < 10.0, qPrintable(QString::number(took)));
        }
        qunsetenv("TTRACE_INDEX_TIMEOUT_S");
    }

    // The whole open: a one-rank bundle whose file crashes libhdf5 is invalid, not a crash.
    void crashingBundleIsInvalid() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        fs::copy_file(regressions() / "libhdf5-segv-1", root / "rank-00000.h5");
        std::ofstream(root / "manifest.json")
            << R"({"format": "ttrace-bundle", "format_version": 1, "role": "candidate",
                  "variants": ["nominal"], "world_size": 1, "parallel": {"tp": 1},
                  "modules": [{"name": "m", "depth": 1}],
                  "ranks": [{"rank": 0, "file": "rank-00000.h5", "coords": {"tp": 0}}]})";
        const auto report = validateBundle(root);
        bool named = false;
        for (const auto& d : report.diagnostics) {
            named = named ||
                    (crashCode(d.code) && d.toString().find("rank-00000.h5") != std::string::npos);
        }
        QVERIFY(named);
        QVERIFY(!report.ok());
    }

    // Contiguous data in the host's layout is read with pread at the offset the child found;
    // the bytes are those libhdf5 reads.
    void contiguousShardsReadWithoutHdf5() {
        const auto opened = openBundle(fixtures() / "roundtrip");
        QVERIFY(opened.bundle);
        std::size_t checked = 0;
        for (const auto& [id, shards] : opened.bundle->tensors()) {
            for (const auto& shard : shards) {
                QVERIFY2(shard.fileOffset || shard.bytes() == 0, shard.datasetPath.c_str());
                const auto raw = opened.bundle->readShard(shard);
                QVERIFY(raw == readWithHdf5(opened.bundle->rankFile(shard.rank), shard));
                ++checked;
            }
        }
        QVERIFY(checked >= 100);
    }

    void wireRejectsTruncationAndGarbage() {
        const auto good = inProcess(goodRankFiles().front());
        std::string why;
        QVERIFY(decodeRankFacts(good, why));
        for (std::size_t n = 0; n < good.size(); n += 7) {
            QVERIFY(!decodeRankFacts(std::string_view(good).substr(0, n), why));
        }
        QVERIFY(!decodeRankFacts(good + "x", why));
        QVERIFY(!decodeRankFacts("hello\n", why));
        // Flipped bytes: decoded or rejected, never a crash or a huge allocation (a count is
        // checked against the bytes left before anything is sized from it).
        std::mt19937 rng(7);
        for (int i = 0; i < 2000; ++i) {
            auto bad = good;
            for (int k = 0; k < 4; ++k) {
                bad[rng() % bad.size()] = static_cast<char>(rng() & 0xff);
            }
            (void)decodeRankFacts(bad, why);
        }
    }
};

QTEST_GUILESS_MAIN(TestIsolatedIndex)
#include "test_isolated_index.moc"
