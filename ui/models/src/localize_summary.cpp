#include "ttrace/ui/models/localize_summary.h"

#include "ttrace/replay/localize_text.h"

#include <QCoreApplication>

namespace ttrace::ui {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("LocalizeSummary", text);
}

} // namespace

QString localizeConclusion(const replay::LocalizeResult& r) {
    const auto replays = static_cast<int>(r.verdicts.size());
    const QString tail =
        QCoreApplication::translate("LocalizeSummary", " · %n replay(s) in %1 s", nullptr, replays)
            .arg(r.seconds, 0, 'f', 1);
    if (r.verdicts.empty() && !r.start && r.problems.empty() && !r.cancelled) {
        return tr("Nothing to localize: no divergence");
    }
    // The last line of `ttrace localize` for the same result, word for word (a stopped or
    // cancelled walk included).
    return QString::fromStdString(replay::localizeVerdictLine(r)) + tail;
}

} // namespace ttrace::ui
