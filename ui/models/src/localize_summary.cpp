#include "ttrace/ui/models/localize_summary.h"

#include <QCoreApplication>
#include <QStringList>

namespace ttrace::ui {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("LocalizeSummary", text);
}

QString names(const std::vector<std::string>& modules) {
    constexpr std::size_t kNamed = 3;
    QStringList out;
    for (std::size_t i = 0; i < modules.size() && i < kNamed; ++i) {
        out << QString::fromStdString(modules[i]);
    }
    if (modules.size() > kNamed) {
        out << tr("+%1 more").arg(modules.size() - kNamed);
    }
    return out.join(QStringLiteral(", "));
}

} // namespace

QString localizeConclusion(const replay::LocalizeResult& r) {
    const auto replays = static_cast<int>(r.verdicts.size());
    const QString tail =
        QCoreApplication::translate("LocalizeSummary", " · %n replay(s) in %1 s", nullptr, replays)
            .arg(r.seconds, 0, 'f', 1);
    if (!r.problems.empty()) {
        return tr("Localize stopped: %1")
                   .arg(QString::fromStdString(r.problems.front().toString())) +
               tail;
    }
    if (r.cancelled) {
        return tr("Localize cancelled") + tail;
    }
    if (r.guiltyPhase) {
        const auto phase = QString::fromUtf8(replay::localizePhaseName(*r.guiltyPhase).data());
        return (*r.guiltyPhase == replay::LocalizePhase::Reduction
                    ? tr("Localized: the %1 is wrong for %2 (the optimizer step is right given "
                         "the reference's main grads)")
                    : tr("Localized: the %1 is wrong for %2"))
                   .arg(phase, names(r.guiltyParameters)) +
               tail;
    }
    if (r.undetermined()) {
        // Never "nothing introduced" when a suspect could not be replayed.
        for (const auto& v : r.verdicts) {
            if (v.verdict == replay::Verdict::NotReplayable) {
                return tr("Localize undetermined: %1 cannot be replayed (%2)")
                           .arg(QString::fromStdString(v.suspect.module),
                                QString::fromStdString(v.reason)) +
                       tail;
            }
        }
    }
    if (!r.guilty.empty()) {
        return tr("Localized: introduced in %1").arg(names(r.guilty)) + tail;
    }
    if (r.entry) {
        return tr("Localized: every replayed module agrees; the divergence enters at %1 %2")
                   .arg(QString::fromStdString(r.entry->module),
                        QString::fromUtf8(tensorKindName(r.entry->kind).data())) +
               tail;
    }
    if (r.verdicts.empty()) {
        return tr("Nothing to localize: no divergence");
    }
    return tr("Localized: every replayed module agrees given the reference's inputs "
              "(inherited)") +
           tail;
}

} // namespace ttrace::ui
