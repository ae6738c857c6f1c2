#pragma once
// Custom item-data roles of the explorer's models. Models expose numbers and states only; how
// they look (colours, badges) is decided by delegates, so models stay testable without widgets.
#include <Qt>

namespace ttrace::ui {

enum Role : int {
    RatioRole = Qt::UserRole + 1, // double error / tolerance of the cell's worst tensor
    ErrorRole,                    // double relative Frobenius error
    ToleranceRole,                // double tolerance the verdict used
    StatusRole,                   // int(ttrace::Status) of the cell (or module, column 0)
    OriginRole,                   // int(ttrace::Origin) of the module (column 0)
    TensorIndexRole,              // qlonglong index into ResultSet::tensors(), -1 when none
    ModuleNameRole,               // QString canonical module name ("layers.1.mlp.fc2")
    ModuleOrderRole,              // int execution order (min over descendants for groups)
    KindRole,                     // int(ttrace::TensorKind) of a kind column, -1 otherwise
    AggregateRole,                // bool: a group node showing its descendants' worst
    IsModuleRole,                 // bool: a captured module (not a name-only group)
    SortRole,                     // double used by the sort proxy
    LocalizeBadgeRole,            // int(LocalizeBadge): the replay verdict of the module (column 0)
    ModuleTypeRole,               // QString module type ("RMSNorm"), empty for groups
};

} // namespace ttrace::ui
