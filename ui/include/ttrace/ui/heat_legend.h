#pragma once
// The heat map's legend: the colour scale from kScaleMinRatio to kScaleMaxRatio on a log axis
// with the tolerance (ratio 1) marked, plus swatches for missing/invalid tensors and the origin
// badges.
#include <QWidget>

namespace ttrace::ui {

class HeatLegend : public QWidget {
    Q_OBJECT
public:
    explicit HeatLegend(QWidget* parent = nullptr);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
};

} // namespace ttrace::ui
