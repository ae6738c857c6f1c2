#include "ttrace/ui/widget_png.h"

#include <QCoreApplication>
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

} // namespace ttrace::ui
