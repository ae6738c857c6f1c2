#pragma once
// The error of a tensor along one dimension: one bar per index (a head, a token, a hidden
// unit), its slice's relative error in units of the tensor's tolerance, so an error confined to
// one head or to the tokens of one rank stands out as a few tall bars.
#include "ttrace/compare/element_errors.h"

#include <QWidget>

class QCustomPlot;
class QCPBars;

namespace ttrace::ui {

class SliceErrorPlot : public QWidget {
    Q_OBJECT
public:
    explicit SliceErrorPlot(QWidget* parent = nullptr);

    // Shows the report's slices (none: an empty plot saying why).
    void setSlices(const std::vector<SliceError>& slices, int dimension);
    [[nodiscard]] int barCount() const { return count_; }
    void replotNow();

private:
    QCustomPlot* plot_;
    QCPBars* clean_;
    QCPBars* divergent_;
    int count_ = 0;
};

} // namespace ttrace::ui
