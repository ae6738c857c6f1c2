#pragma once
// The heat map's colour scale: error/tolerance ratio on a log axis. Pure functions, shared by the
// tree delegate, the legend, the plots and the tests.
//
// ratio <= 1e-4: grey (no measurable difference), up to ~0.1: green (round-off well inside the
// tolerance), towards 1: amber (round-off close to the tolerance), > 1: red, darker per decade
// (a bug). The step at 1 is deliberate: a divergent cell must never look like a clean one.
#include "ttrace/diff_result.h"

#include <QColor>

namespace ttrace::ui {

inline constexpr double kScaleMinRatio = 1e-4;
inline constexpr double kScaleMaxRatio = 1e3;

// Colour of a cell whose worst tensor has this ratio; NaN and infinity count as the worst.
QColor heatColor(double ratio);
// Colour for a status that has no meaningful ratio (missing, invalid); heatColor otherwise.
QColor heatColor(Status status, double ratio);
// Position of a ratio on the legend, 0 at kScaleMinRatio, 1 at kScaleMaxRatio (log scale).
double heatPosition(double ratio);
// The ratio at a legend position (inverse of heatPosition).
double ratioAtPosition(double position);
// Black or white, whichever reads better on `background`.
QColor contrastingText(const QColor& background);
// Colours of the origin badges.
QColor introducedBadgeColor();
QColor inheritedBadgeColor();

} // namespace ttrace::ui
