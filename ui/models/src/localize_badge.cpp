#include "ttrace/ui/models/localize_badge.h"

#include <QCoreApplication>

namespace ttrace::ui {

QString localizeBadgeText(LocalizeBadge badge) {
    const auto tr = [](const char* text) {
        return QCoreApplication::translate("LocalizeBadge", text);
    };
    switch (badge) {
    case LocalizeBadge::None: return {};
    case LocalizeBadge::Replaying: return tr("replaying…");
    case LocalizeBadge::IntroducedHere: return tr("introduced here");
    case LocalizeBadge::IntroducedBelow: return tr("introduced below");
    case LocalizeBadge::Inherited: return tr("inherited");
    case LocalizeBadge::NotReplayable: return tr("not replayable");
    // Short: the pill sits beside the module name in the tree; the tooltip says the rest.
    case LocalizeBadge::ReductionGuilty: return tr("grad reduction");
    case LocalizeBadge::StepGuilty: return tr("optimizer step");
    }
    return {};
}

QColor localizeBadgeColor(LocalizeBadge badge) {
    switch (badge) {
    case LocalizeBadge::IntroducedHere:
    case LocalizeBadge::ReductionGuilty:
    case LocalizeBadge::StepGuilty: return QColor(0x7f1d1d); // dark red: the bug is here
    case LocalizeBadge::IntroducedBelow: return QColor(0xc2410c);
    case LocalizeBadge::Inherited: return QColor(0x15803d); // green: this module is fine
    case LocalizeBadge::NotReplayable: return QColor(0x6b7280);
    case LocalizeBadge::Replaying: return QColor(0x2563eb);
    case LocalizeBadge::None: break;
    }
    return {};
}

bool isGuiltyBadge(LocalizeBadge badge) {
    return badge == LocalizeBadge::IntroducedHere || badge == LocalizeBadge::ReductionGuilty ||
           badge == LocalizeBadge::StepGuilty;
}

} // namespace ttrace::ui
