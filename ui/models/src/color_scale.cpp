#include "ttrace/ui/models/color_scale.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ttrace::ui {
namespace {

struct Stop {
    double log10Ratio;
    QRgb rgb;
};

// Clean side, up to and including ratio 1.
constexpr std::array<Stop, 5> kClean{{
    {-4.0, 0xdde3de}, // grey: nothing measurable
    {-2.0, 0x9fd4a4}, // light green
    {-1.0, 0x5fb86a}, // green
    {-0.4, 0xe9c46a}, // amber, closing in on the tolerance
    {0.0, 0xf4a03a},  // orange-amber at exactly the tolerance
}};
// Divergent side, ratio > 1.
constexpr std::array<Stop, 4> kDivergent{{
    {0.0, 0xf26b5b}, // red from the first ulp above 1
    {1.0, 0xdc3a2f},
    {2.0, 0xb51f24},
    {3.0, 0x7f0d16}, // dark red: orders of magnitude beyond round-off
}};

QColor mix(QRgb a, QRgb b, double t) {
    const auto channel = [t](int x, int y) {
        return static_cast<int>(std::lround(x + (y - x) * t));
    };
    return QColor(channel(qRed(a), qRed(b)), channel(qGreen(a), qGreen(b)),
                  channel(qBlue(a), qBlue(b)));
}

template <std::size_t N> QColor interpolate(const std::array<Stop, N>& stops, double x) {
    if (x <= stops.front().log10Ratio) {
        return QColor(stops.front().rgb);
    }
    for (std::size_t i = 1; i < N; ++i) {
        if (x <= stops[i].log10Ratio) {
            const auto& lo = stops[i - 1];
            const auto& hi = stops[i];
            return mix(lo.rgb, hi.rgb, (x - lo.log10Ratio) / (hi.log10Ratio - lo.log10Ratio));
        }
    }
    return QColor(stops.back().rgb);
}

} // namespace

HeatScale HeatScale::spanning(double worstRatio) {
    HeatScale s;
    if (std::isfinite(worstRatio) && worstRatio > s.maxRatio) {
        s.maxRatio = worstRatio;
    }
    return s;
}

QColor heatColor(double ratio) {
    return heatColor(ratio, HeatScale{});
}

QColor heatColor(double ratio, const HeatScale& scale) {
    if (std::isnan(ratio) || ratio > 1.0) {
        // The divergent stops cover log10 0..3; the scale's span is mapped onto them.
        const double span = std::log10(std::max(scale.maxRatio, 10.0));
        const double x = std::isfinite(ratio) ? std::log10(ratio) * 3.0 / span : 1e9;
        return interpolate(kDivergent, x);
    }
    const double x = ratio > 0.0 ? std::log10(ratio) : -1e9;
    return interpolate(kClean, x);
}

QColor heatColor(Status status, double ratio) {
    return heatColor(status, ratio, HeatScale{});
}

QColor heatColor(Status status, double ratio, const HeatScale& scale) {
    switch (status) {
    case Status::Missing:
    case Status::Unresolved: return QColor(0xb8bcc2); // neutral: nothing to compare
    case Status::Invalid:
        return QColor(0x8e44ad); // purple: shards could not be merged, itself a bug signal
    case Status::Drift: return QColor(0xd4a72c); // amber: another kernel's rounding, no bug
    case Status::Clean:
    case Status::Divergent: break;
    }
    return heatColor(ratio, scale);
}

double heatPosition(double ratio, const HeatScale& scale) {
    if (std::isnan(ratio)) {
        return 1.0;
    }
    if (ratio <= kScaleMinRatio) {
        return 0.0;
    }
    const double lo = std::log10(kScaleMinRatio);
    const double hi = std::log10(scale.maxRatio);
    return std::clamp((std::log10(ratio) - lo) / (hi - lo), 0.0, 1.0);
}

double ratioAtPosition(double position, const HeatScale& scale) {
    const double lo = std::log10(kScaleMinRatio);
    const double hi = std::log10(scale.maxRatio);
    return std::pow(10.0, lo + std::clamp(position, 0.0, 1.0) * (hi - lo));
}

QColor contrastingText(const QColor& background) {
    // Relative luminance (sRGB weights); 0.55 keeps black text on amber and light red.
    const double y =
        0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
    return y < 0.55 ? QColor(Qt::white) : QColor(0x1d1f21);
}

QColor introducedBadgeColor() {
    return QColor(0xc0392b);
}
QColor inheritedBadgeColor() {
    return QColor(0x7f8c8d);
}

} // namespace ttrace::ui
