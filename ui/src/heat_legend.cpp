#include "ttrace/ui/heat_legend.h"

#include "ttrace/ui/badge_painter.h"
#include "ttrace/ui/models/color_scale.h"
#include "ttrace/ui/models/number_format.h"

#include <QPainter>

#include <cmath>

namespace ttrace::ui {
namespace {

constexpr int kBarHeight = 12;
constexpr int kMargin = 6;

QString decadeLabel(int exponent) {
    switch (exponent) {
    case 0: return QStringLiteral("1");
    case 1: return QStringLiteral("10");
    case 2: return QStringLiteral("100");
    case -1: return QStringLiteral("0.1");
    case -2: return QStringLiteral("0.01");
    default: return QStringLiteral("1e%1").arg(exponent);
    }
}

} // namespace

HeatLegend::HeatLegend(QWidget* parent)
    : QWidget(parent) {
    setObjectName(QStringLiteral("heatLegend"));
    setToolTip(tr("Cell colour: error / tolerance on a log scale. Up to 1 the difference is "
                  "round-off; above 1 it is a bug."));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void HeatLegend::setScale(const HeatScale& scale) {
    if (!(scale == scale_)) {
        scale_ = scale;
        update();
    }
}

QString HeatLegend::caption() const {
    return scale_.maxRatio > kScaleMaxRatio
               ? tr("error / tolerance, log scale to the worst ratio %1")
                     .arg(formatRatio(scale_.maxRatio))
               : tr("error / tolerance, log scale");
}

QSize HeatLegend::sizeHint() const {
    return {520, kBarHeight + 2 * fontMetrics().height() + 3 * kMargin};
}

QSize HeatLegend::minimumSizeHint() const {
    return {300, sizeHint().height()};
}

void HeatLegend::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm = fontMetrics();
    const QColor text = palette().color(QPalette::WindowText);

    // Right side: swatches and badges, measured first so the bar takes the rest.
    const QString missing = tr("missing");
    const QString invalid = tr("invalid");
    const QString introduced = tr("introduced");
    const QString inherited = tr("inherited");
    const int swatch = kBarHeight;
    const int extrasWidth = 2 * (swatch + 4) + fm.horizontalAdvance(missing) +
                            fm.horizontalAdvance(invalid) + badgeWidth(font(), introduced) +
                            badgeWidth(font(), inherited) + 4 * 10;
    const int barLeft = kMargin + fm.horizontalAdvance(QStringLiteral("1e-4")) / 2;
    const int barRight = std::max(barLeft + 100, width() - extrasWidth - 3 * kMargin);
    const int barTop = kMargin + fm.height();
    const QRect bar(barLeft, barTop, barRight - barLeft, kBarHeight);

    p.setPen(text);
    p.drawText(QRect(kMargin, 0, bar.right(), barTop), Qt::AlignLeft | Qt::AlignVCenter, caption());
    for (int x = bar.left(); x <= bar.right(); ++x) {
        const double pos = static_cast<double>(x - bar.left()) / std::max(1, bar.width() - 1);
        p.setPen(heatColor(ratioAtPosition(pos, scale_), scale_));
        p.drawLine(x, bar.top(), x, bar.bottom());
    }
    const double lo = std::log10(kScaleMinRatio);
    const double hi = std::log10(scale_.maxRatio);
    // Every decade gets a tick; labels only as many as fit (the tolerance's always).
    const double perDecade = bar.width() / (hi - lo);
    const int labelEvery =
        std::max(1, static_cast<int>(std::ceil((fm.horizontalAdvance(QStringLiteral("1e-4")) + 6) /
                                               std::max(perDecade, 1.0))));
    for (int e = static_cast<int>(lo); e <= static_cast<int>(std::floor(hi)); ++e) {
        const int x =
            bar.left() + static_cast<int>(std::lround((e - lo) / (hi - lo) * bar.width()));
        const bool tolerance = e == 0;
        p.setPen(QPen(tolerance ? QColor(0x1d1f21) : text, tolerance ? 2 : 1));
        p.drawLine(x, bar.bottom() + 1, x, bar.bottom() + (tolerance ? 6 : 4));
        if (tolerance) {
            p.drawLine(x, bar.top() - 3, x, bar.bottom() + 1);
        }
        if (!tolerance && e % labelEvery != 0) {
            continue;
        }
        QFont f = font();
        f.setBold(tolerance);
        p.setFont(f);
        const QString label = decadeLabel(e);
        const int w = QFontMetrics(f).horizontalAdvance(label);
        p.drawText(QRect(x - w / 2 - 2, bar.bottom() + 5, w + 4, fm.height()), Qt::AlignCenter,
                   label);
    }
    p.setFont(font());

    // Swatches and badges, vertically centred on the bar.
    int x = bar.right() + 3 * kMargin;
    const auto drawSwatch = [&](const QColor& c, const QString& label) {
        p.fillRect(QRect(x, bar.top(), swatch, swatch), c);
        x += swatch + 4;
        p.setPen(text);
        p.drawText(QRect(x, bar.top() - 4, fm.horizontalAdvance(label) + 2, swatch + 8),
                   Qt::AlignLeft | Qt::AlignVCenter, label);
        x += fm.horizontalAdvance(label) + 10;
    };
    drawSwatch(heatColor(ttrace::Status::Missing, 0.0), missing);
    drawSwatch(heatColor(ttrace::Status::Invalid, 0.0), invalid);
    const QRect badgeArea(x, bar.top() - 4, badgeWidth(font(), introduced), swatch + 8);
    paintBadge(&p, badgeArea, font(), introduced, introducedBadgeColor());
    x += badgeArea.width() + 10;
    paintBadge(&p, QRect(x, bar.top() - 4, badgeWidth(font(), inherited), swatch + 8), font(),
               inherited, inheritedBadgeColor());
}

} // namespace ttrace::ui
