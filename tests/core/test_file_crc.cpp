// The rank-file CRC-32 read in pieces checksummed in parallel and combined must equal the CRC
// of the whole file, for every size around the piece boundaries, and a changed file must not
// be answered from the per-process memo. The rank-file cache on disk answers only for the
// file and stamp it was written for, and ignores damaged entries.
#include "io/cache_files.h"
#include "io/file_integrity.h"
#include "io/file_stamp.h"
#include "io/rank_file_cache.h"

#include <QtTest>

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

using namespace ttrace;
namespace fs = std::filesystem;

namespace {

std::vector<char> randomBytes(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<char> bytes(n);
    for (auto& b : bytes) {
        b = static_cast<char>(gen() & 0xff);
    }
    return bytes;
}

std::uint32_t wholeCrc(const std::vector<char>& bytes) {
    return static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                            reinterpret_cast<const Bytef*>(bytes.data()),
                                            static_cast<uInt>(bytes.size())));
}

void writeFile(const fs::path& file, const std::vector<char>& bytes) {
    std::ofstream(file, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

class TestFileCrc : public QObject {
    Q_OBJECT
private:
    fs::path dir_;

private slots:
    void initTestCase() {
        dir_ = fs::temp_directory_path() /
               ("ttrace-test-crc-" + std::to_string(QCoreApplication::applicationPid()));
        fs::create_directories(dir_);
        qputenv("XDG_CACHE_HOME", QByteArray::fromStdString((dir_ / "cache").string()));
        // Files the cache may hold: written before the racy window (rank_file_cache.h).
        writeFile(dir_ / "old-a", randomBytes(5000, 5));
        writeFile(dir_ / "old-b", randomBytes(6000, 6));
        QTest::qWait(3200);
    }
    void cleanupTestCase() { fs::remove_all(dir_); }
    void piecewiseEqualsWhole() {
        const std::size_t piece = 4096;
        for (const std::size_t size : {std::size_t{0}, std::size_t{1}, piece - 1, piece, piece + 1,
                                       3 * piece + 17, 7 * piece}) {
            const auto bytes = randomBytes(size, static_cast<unsigned>(size));
            const auto file = dir_ / ("f" + std::to_string(size));
            writeFile(file, bytes);
            const auto crc = fileCrc32InPieces(file, piece);
            QVERIFY(crc);
            QCOMPARE(*crc, wholeCrc(bytes));
        }
    }
    void defaultPiecesOfALargeFile() {
        // Over one 8 MiB piece, and not a multiple of it.
        const auto bytes = randomBytes((std::size_t{8} << 20) + 12345, 99);
        const auto file = dir_ / "large";
        writeFile(file, bytes);
        const auto crc = fileCrc32(file);
        QVERIFY(crc);
        QCOMPARE(*crc, wholeCrc(bytes));
    }
    void aRewrittenFileIsReadAgain() {
        const auto file = dir_ / "rewritten";
        const auto first = randomBytes(10000, 1);
        writeFile(file, first);
        QCOMPARE(fileCrc32(file).value_or(0), wholeCrc(first));
        QCOMPARE(fileCrc32(file).value_or(0), wholeCrc(first)); // memo
        auto second = first;
        second[5000] = static_cast<char>(second[5000] ^ 1);
        // Same size: only the stamp's times tell, and file times may be as coarse as the
        // kernel's tick, so the rewrite waits for the next one.
        QTest::qWait(50);
        writeFile(file, second);
        QCOMPARE(fileCrc32(file).value_or(0), wholeCrc(second));
    }
    void cacheAnswersOnlyForItsFileAndStamp() {
        const auto a = dir_ / "old-a", b = dir_ / "old-b";
        const auto stampA = *stampOf(a), stampB = *stampOf(b);
        storeFileCrc(a, stampA, 0x12345678u);
        QCOMPARE(cachedFileCrc(a, stampA).value_or(0), 0x12345678u);
        auto other = stampA;
        other.ctimeNs += 1; // any change to the file changes its stamp
        QVERIFY(!cachedFileCrc(a, other));
        QVERIFY(!cachedFileCrc(b, stampB));
        // a's entry under b's name (as a hash collision would place it): its key says a.
        const auto entries = dir_ / "cache" / "ttrace" / "rank-files";
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(entries)) {
            files.push_back(e.path());
        }
        QCOMPARE(files.size(), std::size_t{1});
        storeFileCrc(b, stampB, 0x9abcdef0u);
        for (const auto& e : fs::directory_iterator(entries)) {
            if (e.path() != files[0]) {
                fs::copy_file(files[0], e.path(), fs::copy_options::overwrite_existing);
            }
        }
        QVERIFY(!cachedFileCrc(b, stampB));
    }
    void damagedOrRecentEntriesAreNotUsed() {
        const auto a = dir_ / "old-a";
        const auto stamp = *stampOf(a);
        storeFileCrc(a, stamp, 42u);
        const auto entries = dir_ / "cache" / "ttrace" / "rank-files";
        for (const auto& e : fs::directory_iterator(entries)) {
            fs::resize_file(e.path(), fs::file_size(e.path()) - 1); // truncated
        }
        QVERIFY(!cachedFileCrc(a, stamp));
        // A file written just now may be written again within its stamp's granularity.
        const auto fresh = dir_ / "fresh";
        writeFile(fresh, randomBytes(100, 7));
        storeFileCrc(fresh, *stampOf(fresh), 7u);
        QVERIFY(!cachedFileCrc(fresh, *stampOf(fresh)));
        // A stamp the file no longer has is not stored either.
        auto gone = stamp;
        gone.size += 1;
        storeFileCrc(a, gone, 43u);
        QVERIFY(!cachedFileCrc(a, gone));
    }
    void missingOrSpecialFilesHaveNoCrc() {
        QVERIFY(!fileCrc32(dir_ / "absent"));
        QVERIFY(!fileCrc32InPieces(dir_, 4096)); // a directory
        QVERIFY(!fileCrc32InPieces(dir_ / "f1", 0));
    }
};

QTEST_GUILESS_MAIN(TestFileCrc)
#include "test_file_crc.moc"
