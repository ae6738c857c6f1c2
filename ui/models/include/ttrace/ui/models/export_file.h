#pragma once
// One file an export writes: where, and how its bytes are made. The bytes are made on the export
// runner's thread (a PNG's encoding, a report's rendering), so what they need from the window is
// captured on the GUI thread first (the widget's picture, the view's report sections).
#include <QByteArray>
#include <QImage>
#include <QString>

#include <functional>
#include <optional>

namespace ttrace::ui {

struct ExportFile {
    QString path;
    // The file's content; on failure leaves it empty and says why in `error`.
    std::function<QByteArray(QString& error)> bytes;
};

// A PNG of `image` (grabbed on the GUI thread), encoded when the export runs.
ExportFile pngExport(const QString& path, QImage image);
// Text rendered when the export runs (UTF-8).
ExportFile textExport(const QString& path, std::function<QString()> render);

// Makes the file's folder and writes `bytes` whole (a failed write leaves no partial file);
// the error names the file: "PATH: why".
std::optional<QString> writeExportFile(const QString& path, const QByteArray& bytes);
// Makes the bytes of `file` and writes them; the error names the file.
std::optional<QString> runExportFile(const ExportFile& file);

} // namespace ttrace::ui
