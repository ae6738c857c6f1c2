#pragma once
// What a replay said about one module, as the layer tree shows it. The delegate paints a pill
// from LocalizeBadgeRole; the words live here so tests, reports and the tree say the same.
#include <QColor>
#include <QString>

namespace ttrace::ui {

enum class LocalizeBadge {
    None,
    Replaying,       // a replay of this module is under way
    IntroducedHere,  // still diverges given the reference's inputs, and no child does
    IntroducedBelow, // diverges given the reference's inputs because a child does
    Inherited,       // agrees given the reference's inputs: the error came from upstream
    NotReplayable,   // the agent cannot replay it (the tooltip says why)
    ReductionGuilty, // its gradients were reduced wrongly (the step is right given them)
    StepGuilty,      // the optimizer step updates its parameters wrongly
};

// "introduced here", "inherited", ...; empty for None.
QString localizeBadgeText(LocalizeBadge badge);
// One colour per verdict, distinct from the heat scale's reds so the pill reads as a verdict.
QColor localizeBadgeColor(LocalizeBadge badge);
// Whether the badge names where the bug is.
bool isGuiltyBadge(LocalizeBadge badge);

} // namespace ttrace::ui
