#include "ttrace/ui/models/export_path.h"

#include <QDir>
#include <QFileInfo>

namespace ttrace::ui {

QString defaultExportPath(const QString& candidateDir, const QString& what, const QString& suffix,
                          const QDateTime& when) {
    const QDir folder =
        candidateDir.isEmpty() ? QDir::home() : QFileInfo(candidateDir).absoluteDir();
    QString stem = what.toLower();
    stem.replace(QLatin1Char(' '), QLatin1Char('-'));
    return folder.filePath(
        QStringLiteral("ttrace-%1-%2.%3")
            .arg(stem, when.toString(QStringLiteral("yyyyMMdd-HHmmss")), suffix));
}

} // namespace ttrace::ui
