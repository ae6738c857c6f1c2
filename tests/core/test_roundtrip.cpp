// Python writes every dtype and placement kind; the C++ reader must rebuild each logical tensor
// to exactly the values (and, for copies, the very bits) Python computed.
#include "ttrace/io/bundle.h"
#include "ttrace/merge/merge.h"

#include <QtTest>

#include <hdf5.h>

#include <cmath>
#include <cstring>
#include <set>

using namespace ttrace;

namespace {

constexpr hid_t kStoredType = -1; // readExpected: use the dataset's own native type

// Reads a whole dataset of the expected file into `out` with the given memory type.
bool readExpected(hid_t file, const std::string& path, hid_t memType, void* out,
                  std::size_t bytes) {
    if (H5Lexists(file, path.c_str(), H5P_DEFAULT) <= 0) {
        return false;
    }
    const hid_t ds = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
    const hid_t space = H5Dget_space(ds);
    const auto n = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space));
    const hid_t type = H5Dget_type(ds);
    const hid_t native = H5Tget_native_type(type, H5T_DIR_ASCEND);
    const hid_t use = memType == kStoredType ? native : memType;
    const bool sizeOk = n * H5Tget_size(use) == bytes;
    const bool ok = sizeOk && H5Dread(ds, use, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0;
    H5Tclose(native);
    H5Tclose(type);
    H5Sclose(space);
    H5Dclose(ds);
    return ok;
}

} // namespace

class TestRoundtrip : public QObject {
    Q_OBJECT
private slots:
    void everyTensorRebuildsExactly() {
        const std::string root = qEnvironmentVariable("TTRACE_FIXTURES_DIR").toStdString();
        const auto opened = openBundle(root + "/roundtrip");
        QVERIFY(opened.bundle);
        for (const auto& d : opened.diagnostics) {
            QFAIL(d.toString().c_str());
        }
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        const hid_t expected =
            H5Fopen((root + "/roundtrip-expected.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        QVERIFY(expected >= 0);
        std::set<std::string> dtypes;
        std::set<std::string> layouts;
        std::size_t bitChecks = 0;
        for (const auto& [id, shards] : opened.bundle->tensors()) {
            const auto merged = mergeTensor(*opened.bundle, id);
            for (const auto& f : merged.findings) {
                QFAIL(f.toString().c_str());
            }
            QVERIFY(merged.tensor);
            const auto& t = *merged.tensor;
            std::vector<double> want(t.values.size());
            QVERIFY2(
                readExpected(expected, id.path(), H5T_NATIVE_DOUBLE, want.data(), want.size() * 8),
                id.path().c_str());
            for (std::size_t i = 0; i < want.size(); ++i) {
                const bool same = (std::isnan(want[i]) && std::isnan(t.values[i])) ||
                                  std::memcmp(&want[i], &t.values[i], sizeof(double)) == 0;
                if (!same) {
                    QFAIL(qPrintable(QString("%1 element %2: got %3, want %4")
                                         .arg(QString::fromStdString(id.path()))
                                         .arg(i)
                                         .arg(t.values[i], 0, 'g', 17)
                                         .arg(want[i], 0, 'g', 17)));
                }
            }
            if (!t.rawBits.empty()) {
                // Read the expected bits in their stored type, without any HDF5 conversion.
                std::vector<std::byte> bits(t.rawBits.size());
                if (readExpected(expected, id.path() + "__bits", kStoredType, bits.data(),
                                 bits.size())) {
                    QVERIFY2(bits == t.rawBits, (id.path() + ": raw bits differ").c_str());
                    ++bitChecks;
                }
            }
            dtypes.insert(std::string(dtypeName(t.dtype)));
            const auto& p = shards.front().placement;
            layouts.insert(std::string(combineName(p.combine)));
            layouts.insert(p.kind == PlacementKind::Flat ? "flat" : "boxes");
            if (p.boxes.size() > 1) {
                layouts.insert("multi-box");
            }
            if (p.isScalar) {
                layouts.insert("scalar");
            }
        }
        H5Fclose(expected);
        QCOMPARE(dtypes.size(), std::size_t{10});
        for (const char* layout :
             {"copy", "sum", "replica", "flat", "boxes", "multi-box", "scalar"}) {
            QVERIFY2(layouts.contains(layout), layout);
        }
        QVERIFY(bitChecks >= 10);
    }
};

QTEST_APPLESS_MAIN(TestRoundtrip)
#include "test_roundtrip.moc"
