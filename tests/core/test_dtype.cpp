// Decoding of raw-bit dtypes against hand-computed values.
#include "ttrace/io/dtype.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace ttrace;

class TestDType : public QObject {
    Q_OBJECT
private slots:
    void names() {
        for (const char* name : {"float64", "float32", "float16", "bfloat16", "float8_e4m3fn",
                                 "float8_e5m2", "int64", "int32", "uint8", "bool"}) {
            const auto t = parseDType(name);
            QVERIFY2(t.has_value(), name);
            QCOMPARE(std::string(dtypeName(*t)), std::string(name));
        }
        QVERIFY(!parseDType("float7"));
    }
    void half() {
        QCOMPARE(decodeHalf(0x3C00), 1.0);
        QCOMPARE(decodeHalf(0xC000), -2.0);
        QCOMPARE(decodeHalf(0x7BFF), 65504.0);
        QCOMPARE(decodeHalf(0x0001), std::ldexp(1.0, -24)); // smallest subnormal
        QVERIFY(std::signbit(decodeHalf(0x8000)));
        QVERIFY(std::isinf(decodeHalf(0x7C00)));
        QVERIFY(std::isnan(decodeHalf(0x7E00)));
    }
    void bfloat16() {
        QCOMPARE(decodeBFloat16(0x3F80), 1.0);
        QCOMPARE(decodeBFloat16(0x4049), 3.140625);
        QCOMPARE(decodeBFloat16(0x0001), std::ldexp(1.0, -133)); // smallest subnormal
        QVERIFY(std::isnan(decodeBFloat16(0x7FC0)));
    }
    void float8e4m3() {
        QCOMPARE(decodeFloat8E4M3(0x38), 1.0);   // 0.0111.000: 2^(7-7)
        QCOMPARE(decodeFloat8E4M3(0x7E), 448.0); // max finite
        QCOMPARE(decodeFloat8E4M3(0xFE), -448.0);
        QCOMPARE(decodeFloat8E4M3(0x01), std::ldexp(1.0, -9)); // smallest subnormal
        QVERIFY(std::isnan(decodeFloat8E4M3(0x7F)));
        QVERIFY(std::isnan(decodeFloat8E4M3(0xFF)));
        QCOMPARE(decodeFloat8E4M3(0x78), 256.0); // exponent 15 is finite in e4m3fn
    }
    void float8e5m2() {
        QCOMPARE(decodeFloat8E5M2(0x3C), 1.0);
        QCOMPARE(decodeFloat8E5M2(0x7B), 57344.0); // max finite
        QCOMPARE(decodeFloat8E5M2(0x01), std::ldexp(1.0, -16));
        QVERIFY(std::isinf(decodeFloat8E5M2(0x7C)));
        QVERIFY(std::isnan(decodeFloat8E5M2(0x7D)));
    }
    void epsilons() {
        QCOMPARE(machineEpsilon(DType::Float32), std::ldexp(1.0, -23));
        QCOMPARE(machineEpsilon(DType::BFloat16), 0.0078125);
        QCOMPARE(machineEpsilon(DType::Int64), 0.0);
    }
    void decodeElementsRejectsShortBuffers() {
        std::vector<std::byte> raw(3);
        std::vector<double> out(2);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodeElements(DType::Float16, raw, out));
    }
};

QTEST_APPLESS_MAIN(TestDType)
#include "test_dtype.moc"
