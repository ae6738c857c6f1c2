#include "ttrace/ui/models/export_file.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QImageWriter>
#include <QSaveFile>

#include <utility>

namespace ttrace::ui {

ExportFile pngExport(const QString& path, QImage image) {
    return {path, [image = std::move(image)](QString& error) {
                if (image.isNull()) {
                    error = QObject::tr("the window could not be rendered");
                    return QByteArray();
                }
                QByteArray bytes;
                QBuffer buffer(&bytes);
                buffer.open(QIODevice::WriteOnly);
                QImageWriter writer(&buffer, "png");
                if (!writer.write(image)) {
                    error = writer.errorString();
                    return QByteArray();
                }
                return bytes;
            }};
}

ExportFile textExport(const QString& path, std::function<QString()> render) {
    return {path, [render = std::move(render)](QString&) { return render().toUtf8(); }};
}

std::optional<QString> writeExportFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        return QStringLiteral("%1: %2").arg(path, file.errorString());
    }
    return std::nullopt;
}

std::optional<QString> runExportFile(const ExportFile& file) {
    QString error;
    const QByteArray bytes = file.bytes(error);
    if (!error.isEmpty()) {
        return QStringLiteral("%1: %2").arg(file.path, error);
    }
    return writeExportFile(file.path, bytes);
}

} // namespace ttrace::ui
