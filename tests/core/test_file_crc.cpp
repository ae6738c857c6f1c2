// The rank-file CRC-32 read in pieces checksummed in parallel and combined must equal the CRC
// of the whole file, for every size around the piece boundaries, and a changed file must not
// be answered from the per-process memo.
#include "io/file_integrity.h"

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
    void missingOrSpecialFilesHaveNoCrc() {
        QVERIFY(!fileCrc32(dir_ / "absent"));
        QVERIFY(!fileCrc32InPieces(dir_, 4096)); // a directory
        QVERIFY(!fileCrc32InPieces(dir_ / "f1", 0));
    }
};

QTEST_GUILESS_MAIN(TestFileCrc)
#include "test_file_crc.moc"
