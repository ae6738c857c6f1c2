#include "ttrace/ui/widget_png.h"

#include <QDir>
#include <QFileInfo>
#include <QImageWriter>
#include <QLayout>
#include <QWidget>

namespace ttrace::ui {

QImage renderWidget(QWidget* widget) {
    if (auto* layout = widget->layout()) {
        layout->activate();
    }
    return widget->grab().toImage();
}

bool saveWidgetPng(QWidget* widget, const QString& path, QString* error) {
    const QImage image = renderWidget(widget);
    if (image.isNull()) {
        if (error) {
            *error = QObject::tr("%1: the window could not be rendered").arg(path);
        }
        return false;
    }
    QDir().mkpath(QFileInfo(path).absolutePath());
    QImageWriter writer(path, "png");
    if (!writer.write(image)) {
        if (error) {
            *error = QStringLiteral("%1: %2").arg(path, writer.errorString());
        }
        return false;
    }
    return true;
}

} // namespace ttrace::ui
