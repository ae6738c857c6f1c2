#include "ttrace/ui/models/number_format.h"

#include <cmath>

namespace ttrace::ui {
namespace {

// "2.5e+05" -> "2.5e5", "1.0e-03" -> "1.0e-3": narrower heat-map cells.
QString compactExponent(QString text) {
    const auto e = text.indexOf('e');
    if (e < 0) {
        return text;
    }
    QString exponent = text.mid(e + 1);
    const bool negative = exponent.startsWith('-');
    exponent.remove(0, exponent.startsWith('-') || exponent.startsWith('+') ? 1 : 0);
    while (exponent.size() > 1 && exponent.startsWith('0')) {
        exponent.remove(0, 1);
    }
    return text.left(e + 1) + (negative ? QStringLiteral("-") : QString()) + exponent;
}

} // namespace

QString formatRatio(double ratio) {
    if (std::isnan(ratio)) {
        return QStringLiteral("NaN");
    }
    if (std::isinf(ratio)) {
        return ratio > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    }
    const double a = std::fabs(ratio);
    if (a == 0.0) {
        return QStringLiteral("0");
    }
    if (a < 0.01 || a >= 1000.0) {
        return compactExponent(QString::number(ratio, 'e', 1));
    }
    if (a < 10.0) {
        return QString::number(ratio, 'f', 2);
    }
    return QString::number(ratio, 'f', 0);
}

QString formatScientific(double value) {
    if (std::isnan(value)) {
        return QStringLiteral("NaN");
    }
    if (std::isinf(value)) {
        return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    }
    if (value == 0.0) {
        return QStringLiteral("0");
    }
    return QString::number(value, 'e', 2);
}

QString formatCount(std::int64_t value) {
    QString digits = QString::number(value < 0 ? -value : value);
    for (qsizetype i = digits.size() - 3; i > 0; i -= 3) {
        digits.insert(i, QChar(0x202f)); // narrow no-break space
    }
    return value < 0 ? QStringLiteral("-") + digits : digits;
}

} // namespace ttrace::ui
