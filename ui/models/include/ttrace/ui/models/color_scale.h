#pragma once
// The heat map's colour scale: error/tolerance ratio on a log axis. Pure functions, shared by the
// tree delegate, the legend, the plots and the tests.
//
// ratio <= 1e-4: grey (no measurable difference), up to ~0.1: green (round-off well inside the
// tolerance), towards 1: amber (round-off close to the tolerance), > 1: red, darker per decade
// (a bug). The step at 1 is deliberate: a divergent cell must never look like a clean one.
#include "ttrace/compare/diff_result.h"

#include <QColor>

namespace ttrace::ui {

inline constexpr double kScaleMinRatio = 1e-4;
inline constexpr double kScaleMaxRatio = 1e3;

// How far the divergent side of the scale reaches: from ratio 1 (red) to `maxRatio` (darkest),
// on a log axis. A run whose worst ratio is 2.1e5 spans to 2.1e5, so 806 and 2.1e5 never share
// a colour; the default (and the floor) is kScaleMaxRatio.
struct HeatScale {
    double maxRatio = kScaleMaxRatio;
    // The scale for a run whose worst finite ratio is `worstRatio`.
    static HeatScale spanning(double worstRatio);
    bool operator==(const HeatScale&) const = default;
};

// Colour of a cell whose worst tensor has this ratio; NaN and infinity count as the worst.
QColor heatColor(double ratio);
QColor heatColor(double ratio, const HeatScale& scale);
// Colour for a status that has no meaningful ratio (missing, invalid); heatColor otherwise.
QColor heatColor(Status status, double ratio);
QColor heatColor(Status status, double ratio, const HeatScale& scale);
// Position of a ratio on the legend, 0 at kScaleMinRatio, 1 at the scale's maxRatio (log scale).
double heatPosition(double ratio, const HeatScale& scale = {});
// The ratio at a legend position (inverse of heatPosition).
double ratioAtPosition(double position, const HeatScale& scale = {});
// Black or white, whichever reads better on `background`.
QColor contrastingText(const QColor& background);
// Colours of the origin badges.
QColor introducedBadgeColor();
QColor inheritedBadgeColor();

} // namespace ttrace::ui
