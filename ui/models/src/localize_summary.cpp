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
    // `ttrace localize` prints these as "error: ..." lines before its last line.
    if (!r.problems.empty()) {
        return tr("Localize stopped: %1")
                   .arg(QString::fromStdString(r.problems.front().toString())) +
               tail;
    }
    if (r.cancelled) {
        return tr("Localize cancelled") + tail;
    }
    if (r.verdicts.empty() && !r.start) {
        return tr("Nothing to localize: no divergence");
    }
    // The last line of `ttrace localize` for the same result, word for word.
    return QString::fromStdString(replay::localizeVerdictLine(r)) + tail;
}

} // namespace ttrace::ui
