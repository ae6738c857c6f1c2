#include "ttrace/ui/models/bundle_folder_check.h"

#include "ttrace/io/manifest.h"

#include <QDir>
#include <QFileInfo>
#include <QObject>

namespace ttrace::ui {

BundleFolderCheck checkBundleFolder(const QString& dir) {
    BundleFolderCheck check;
    const QFileInfo info(dir);
    if (dir.trimmed().isEmpty()) {
        check.problem = QObject::tr("no folder given");
        return check;
    }
    if (!info.isDir()) {
        check.problem = QObject::tr("%1 is not a folder").arg(QDir::toNativeSeparators(dir));
        return check;
    }
    Diagnostics problems;
    const auto manifest = readManifest(info.absoluteFilePath().toStdString(), problems);
    if (!manifest) {
        check.problem =
            problems.empty()
                ? QObject::tr("%1: no readable manifest.json").arg(QDir::toNativeSeparators(dir))
                : QString::fromStdString(problems.front().toString());
        return check;
    }
    check.readable = true;
    check.role = QString::fromStdString(manifest->role);
    const int ranks = manifest->worldSize;
    check.summary =
        QObject::tr("%1 bundle · %2 · %3")
            .arg(check.role,
                 ranks == 1 ? QObject::tr("1 rank") : QObject::tr("%1 ranks").arg(ranks),
                 QString::fromStdString(manifest->precision));
    if (!manifest->model.empty()) {
        check.summary += QStringLiteral(" · ") + QString::fromStdString(manifest->model);
    }
    return check;
}

QString pairProblem(const QString& referenceDir, const BundleFolderCheck& reference,
                    const QString& candidateDir, const BundleFolderCheck& candidate) {
    if (QFileInfo(referenceDir).canonicalFilePath() ==
        QFileInfo(candidateDir).canonicalFilePath()) {
        return QObject::tr("the same bundle twice: give the reference and the candidate");
    }
    if (reference.role == QLatin1String("candidate") &&
        candidate.role == QLatin1String("reference")) {
        return QObject::tr("the two look swapped: the first is a candidate, the second a "
                           "reference (Swap exchanges them)");
    }
    if (reference.role != QLatin1String("reference")) {
        return QObject::tr("the reference folder holds a %1 bundle").arg(reference.role);
    }
    if (candidate.role != QLatin1String("candidate")) {
        return QObject::tr("the candidate folder holds a %1 bundle").arg(candidate.role);
    }
    return {};
}

} // namespace ttrace::ui
