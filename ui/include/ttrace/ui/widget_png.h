#pragma once
// Renders a widget (and its children) to a PNG file with QWidget::grab; works under the
// offscreen platform, so CI can make the same screenshots as a desktop.
#include <QImage>
#include <QString>

class QWidget;

namespace ttrace::ui {

// Renders at the widget's device pixel ratio.
QImage renderWidget(QWidget* widget);
// Writes the rendering; on failure returns false and says why in `error`.
bool saveWidgetPng(QWidget* widget, const QString& path, QString* error = nullptr);

} // namespace ttrace::ui
