#include "ttrace/ui/models/code_changes_text.h"

#include "ttrace/replay/relaunch_layout_text.h"

#include <QCoreApplication>

namespace ttrace::ui {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("CodeChanges", text);
}

} // namespace

QString codeChangesLine(const replay::AgentInfo& info) {
    if (!info.relaunched) {
        return {};
    }
    if (info.codeChanges.empty()) {
        return tr("relaunched from the bundles; the same code as captured");
    }
    return tr("relaunched from the bundles; CHANGED since capture (verdicts judge the code run "
              "now)");
}

QString codeChangesDetail(const replay::AgentInfo& info) {
    QString text = codeChangesLine(info);
    // The relaunch's layout next to the captured one, worded as `ttrace localize` words it.
    if (const auto layout = replay::relaunchLayoutLine(info); !layout.empty()) {
        text += tr("\nlayout: %1").arg(QString::fromStdString(layout));
    }
    for (const auto& change : info.codeChanges) {
        text += QStringLiteral("\n  ") + QString::fromStdString(change);
    }
    return text;
}

} // namespace ttrace::ui
