#pragma once
// What `ttrace serve --print-plan` says it would run: shown to the user before anything runs,
// and its digest given back to `ttrace serve --plan-digest`, which runs only that command.
#include <QString>
#include <QStringList>

#include <optional>

namespace ttrace::ui {

struct RelaunchPlan {
    QString command; // the command as a terminal shows it (cd, environment, program)
    QString digest;  // SHA-256 of what runs, 64 hex digits
    QStringList argv;
    QString cwd;
    int worldSize = 1;

    // From the JSON serve prints; nothing (and `error` says why) when it is not such a plan.
    static std::optional<RelaunchPlan> parse(const QByteArray& json, QString* error);
};

} // namespace ttrace::ui
