#pragma once
// The heat map's legend: the colour scale from kScaleMinRatio to the run's worst ratio on a log
// axis with the tolerance (ratio 1) marked, plus swatches for missing/invalid tensors and the
// origin badges. The caption says how far the scale reaches.
#include "ttrace/ui/models/color_scale.h"

#include <QWidget>

namespace ttrace::ui {

class HeatLegend : public QWidget {
    Q_OBJECT
public:
    explicit HeatLegend(QWidget* parent = nullptr);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    void setScale(const HeatScale& scale);
    [[nodiscard]] const HeatScale& scale() const { return scale_; }
    // "error / tolerance, log scale to the worst ratio 2.1e5".
    [[nodiscard]] QString caption() const;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    HeatScale scale_;
};

} // namespace ttrace::ui
