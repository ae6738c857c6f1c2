#include "ttrace/ui/models/relaunch_plan.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

namespace ttrace::ui {

std::optional<RelaunchPlan> RelaunchPlan::parse(const QByteArray& json, QString* error) {
    const auto fail = [error](const QString& why) -> std::optional<RelaunchPlan> {
        if (error) {
            *error = QCoreApplication::translate("RelaunchPlan",
                                                 "ttrace serve --print-plan printed %1 (is ttrace "
                                                 "on the host as new as this explorer?)")
                         .arg(why);
        }
        return std::nullopt;
    };
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    if (!doc.isObject()) {
        return fail(QStringLiteral("no JSON (%1)").arg(parseError.errorString()));
    }
    const QJsonObject o = doc.object();
    RelaunchPlan plan;
    plan.command = o.value(QStringLiteral("command")).toString();
    plan.digest = o.value(QStringLiteral("digest")).toString();
    plan.cwd = o.value(QStringLiteral("cwd")).toString();
    plan.worldSize = o.value(QStringLiteral("world_size")).toInt(0);
    for (const auto& word : o.value(QStringLiteral("argv")).toArray()) {
        plan.argv << word.toString();
    }
    static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{64}$"));
    if (!hex.match(plan.digest).hasMatch()) {
        return fail(QStringLiteral("no valid digest"));
    }
    if (plan.command.isEmpty() || plan.argv.isEmpty() || plan.worldSize < 1) {
        return fail(QStringLiteral("no command, argv or world size"));
    }
    return plan;
}

} // namespace ttrace::ui
