#pragma once
// Renders a widget (and its children) to an image with QWidget::grab, for a PNG export; works
// under the offscreen platform, so CI can make the same screenshots as a desktop. GUI thread only.
#include <QImage>

class QWidget;

namespace ttrace::ui {

// Renders at the widget's device pixel ratio.
QImage renderWidget(QWidget* widget);

} // namespace ttrace::ui
