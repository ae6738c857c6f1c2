#include "ttrace/ui/models/localize_badge.h"

#include "ttrace/replay/localize_text.h"

#include <QCoreApplication>

namespace ttrace::ui {

QString localizeBadgeText(LocalizeBadge badge) {
    using replay::ModuleFinding;
    // The words `ttrace localize` uses (the core's), so the tree and the CLI agree.
    const auto core = [](ModuleFinding f) {
        return QString::fromUtf8(replay::moduleFindingText(f).data());
    };
    switch (badge) {
    case LocalizeBadge::None: return {};
    case LocalizeBadge::Replaying:
        return QCoreApplication::translate("LocalizeBadge", "replaying…");
    case LocalizeBadge::IntroducedHere: return core(ModuleFinding::IntroducedHere);
    case LocalizeBadge::IntroducedBelow: return core(ModuleFinding::IntroducedBelow);
    case LocalizeBadge::Inherited: return core(ModuleFinding::Inherited);
    case LocalizeBadge::NotReplayable: return core(ModuleFinding::NotReplayable);
    case LocalizeBadge::ReductionGuilty: return core(ModuleFinding::ReductionGuilty);
    case LocalizeBadge::StepGuilty: return core(ModuleFinding::StepGuilty);
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
