#pragma once
// Captured against replayed: for each tensor of a localized module, its error / tolerance as
// captured (the candidate's own inputs) beside the same tensor replayed with the reference's
// inputs. A divergence that vanishes on replay was inherited; one that persists is the bug.
#include "ttrace/ui/models/replay_bars.h"

#include <QString>
#include <QWidget>

#include <vector>

class QCustomPlot;
class QCPBars;

namespace ttrace::ui {

class ReplayComparisonPlot : public QWidget {
    Q_OBJECT
public:
    explicit ReplayComparisonPlot(QWidget* parent = nullptr);

    // `title` names the verdict ("layers.1.mlp.linear_fc1: introduced here").
    void setComparison(const QString& title, const std::vector<ReplayBar>& bars);
    [[nodiscard]] int barCount() const { return count_; }
    // The title last set (the verdict, the replay's iteration and phase).
    [[nodiscard]] QString title() const { return title_; }
    void replotNow();

private:
    QCustomPlot* plot_;
    QCPBars* captured_;
    QCPBars* replayed_;
    int count_ = 0;
    QString title_;
};

} // namespace ttrace::ui
