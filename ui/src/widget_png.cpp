#include "ttrace/ui/widget_png.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QImageWriter>
#include <QLayout>
#include <QWidget>

namespace ttrace::ui {

QImage renderWidget(QWidget* widget) {
    // Text set just before the export (a Localize conclusion) has only posted its layout
    // requests; nested layouts must settle first or wrapped labels render squeezed. A pass can
    // post another (a label's new height moves its parent), hence more than one.
    for (int pass = 0; pass < 3; ++pass) {
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    }
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
