// The heat map's colour scale is a pure function: check its anchors, its monotonic redness above
// the tolerance, the step at ratio 1 and the legend mapping.
#include "ttrace/ui/models/color_scale.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace ttrace;
using namespace ttrace::ui;

namespace {

// A saturated red hue (amber and orange are not): what "divergent" must look like.
bool reddish(const QColor& c) {
    const int h = c.hsvHue();
    return (h >= 345 || (h >= 0 && h <= 12)) && c.hsvSaturation() > 100 && c.value() > 90;
}

} // namespace

class TestColorScale : public QObject {
    Q_OBJECT
private slots:
    void anchors_data() {
        QTest::addColumn<double>("ratio");
        QTest::addColumn<QColor>("expected");
        QTest::newRow("zero") << 0.0 << QColor(0xdde3de);
        QTest::newRow("below scale") << 1e-9 << QColor(0xdde3de);
        QTest::newRow("1e-4") << 1e-4 << QColor(0xdde3de);
        QTest::newRow("0.01") << 0.01 << QColor(0x9fd4a4);
        QTest::newRow("0.1") << 0.1 << QColor(0x5fb86a);
        QTest::newRow("exactly 1") << 1.0 << QColor(0xf4a03a);
        QTest::newRow("10") << 10.0 << QColor(0xdc3a2f);
        QTest::newRow("100") << 100.0 << QColor(0xb51f24);
        QTest::newRow("1e3") << 1e3 << QColor(0x7f0d16);
        QTest::newRow("1e9") << 1e9 << QColor(0x7f0d16);
        QTest::newRow("inf") << std::numeric_limits<double>::infinity() << QColor(0x7f0d16);
        QTest::newRow("nan") << std::numeric_limits<double>::quiet_NaN() << QColor(0x7f0d16);
    }
    void anchors() {
        QFETCH(double, ratio);
        QFETCH(QColor, expected);
        QCOMPARE(heatColor(ratio).name(), expected.name());
    }
    void cleanIsNeverRed_data() {
        QTest::addColumn<double>("ratio");
        for (const double r : {0.0, 1e-6, 1e-3, 0.05, 0.3, 0.7, 0.99, 1.0}) {
            QTest::newRow(qPrintable(QString::number(r))) << r;
        }
    }
    void cleanIsNeverRed() {
        QFETCH(double, ratio);
        QVERIFY2(!reddish(heatColor(ratio)), qPrintable(heatColor(ratio).name()));
    }
    void divergentIsAlwaysRed_data() {
        QTest::addColumn<double>("ratio");
        for (const double r : {1.0000001, 1.5, 3.0, 42.0, 1e4}) {
            QTest::newRow(qPrintable(QString::number(r))) << r;
        }
    }
    void divergentIsAlwaysRed() {
        QFETCH(double, ratio);
        QVERIFY2(reddish(heatColor(ratio)), qPrintable(heatColor(ratio).name()));
    }
    void darkerPerDecadeAboveOne() {
        double previous = 2.0;
        for (double r = 1.5; r <= 1e3; r *= 3.0) {
            const double lightness = heatColor(r).lightnessF();
            QVERIFY2(lightness <= previous + 1e-9, qPrintable(QString::number(r)));
            previous = lightness;
        }
    }
    void statusColours() {
        QCOMPARE(heatColor(Status::Missing, 50.0).name(), QColor(0xb8bcc2).name());
        QCOMPARE(heatColor(Status::Invalid, 0.0).name(), QColor(0x8e44ad).name());
        QCOMPARE(heatColor(Status::Divergent, 10.0), heatColor(10.0));
        QCOMPARE(heatColor(Status::Clean, 0.1), heatColor(0.1));
    }
    void legendPositions() {
        QCOMPARE(heatPosition(kScaleMinRatio), 0.0);
        QCOMPARE(heatPosition(0.0), 0.0);
        QCOMPARE(heatPosition(kScaleMaxRatio), 1.0);
        QCOMPARE(heatPosition(1e9), 1.0);
        QVERIFY(std::abs(heatPosition(1.0) - 4.0 / 7.0) < 1e-12);
        for (const double p : {0.0, 0.25, 0.5, 0.75, 1.0}) {
            QVERIFY(std::abs(heatPosition(ratioAtPosition(p)) - p) < 1e-12);
        }
    }
    void readableText() {
        QCOMPARE(contrastingText(QColor(0x7f0d16)), QColor(Qt::white));
        QCOMPARE(contrastingText(QColor(0xdde3de)).name(), QColor(0x1d1f21).name());
        QCOMPARE(contrastingText(heatColor(1.0)).name(), QColor(0x1d1f21).name());
    }
};

QTEST_APPLESS_MAIN(TestColorScale)
#include "test_color_scale.moc"
