#include "ttrace/ui/phase_timeline.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

namespace ttrace::ui {
namespace {

constexpr int kHeight = 26;
constexpr int kMargin = 8;
constexpr int kGap = 2;
constexpr int kIterationGap = 8; // iterations stand apart, so "it 1" reads as a new step
constexpr int kMarkerWidth = 3;  // the first divergence's outline

} // namespace

PhaseTimeline::PhaseTimeline(QWidget* parent)
    : QWidget(parent) {
    setObjectName(QStringLiteral("phaseTimeline"));
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setCursor(Qt::PointingHandCursor);
    setAccessibleName(tr("Phase timeline"));
    hide();
}

void PhaseTimeline::setResult(std::shared_ptr<const DiffResult> result, const HeatScale& scale) {
    result_ = std::move(result);
    scale_ = scale;
    cells_ = result_ ? phaseCells(*result_) : std::vector<PhaseCell>{};
    setVisible(!cells_.empty());
    update();
}

void PhaseTimeline::clear() {
    setResult(nullptr, {});
}

QSize PhaseTimeline::sizeHint() const {
    return {600, kHeight + 8};
}

QSize PhaseTimeline::minimumSizeHint() const {
    return {120, kHeight + 8}; // cells shrink with the window; labels drop when too narrow
}

QRect PhaseTimeline::cellRect(std::size_t i) const {
    if (i >= cells_.size()) {
        return {};
    }
    int iterations = 0;
    for (std::size_t k = 1; k < cells_.size(); ++k) {
        iterations += cells_[k].iteration != cells_[k - 1].iteration ? 1 : 0;
    }
    const int n = static_cast<int>(cells_.size());
    const int free = width() - 2 * kMargin - (n - 1) * kGap - iterations * kIterationGap;
    const int w = std::max(4, free / std::max(n, 1));
    int x = kMargin;
    for (std::size_t k = 0; k < i; ++k) {
        x += w + kGap + (cells_[k + 1].iteration != cells_[k].iteration ? kIterationGap : 0);
    }
    return {x, 4, w, kHeight};
}

int PhaseTimeline::cellAt(const QPoint& pos) const {
    for (std::size_t i = 0; i < cells_.size(); ++i) {
        if (cellRect(i).contains(pos)) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

QColor PhaseTimeline::cellColor(const PhaseCell& cell) const {
    if (cell.compared == 0) {
        return heatColor(Status::Invalid, 0.0, scale_);
    }
    return heatColor(cell.divergent > 0 ? Status::Divergent : Status::Clean, cell.worstRatio,
                     scale_);
}

void PhaseTimeline::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    p.setFont(small);
    for (std::size_t i = 0; i < cells_.size(); ++i) {
        const auto& cell = cells_[i];
        const QRect r = cellRect(i);
        const QColor color = cellColor(cell);
        p.setPen(Qt::NoPen);
        p.setBrush(color);
        p.drawRoundedRect(r, 3, 3);
        if (cell.firstDivergence) {
            p.setPen(QPen(palette().color(QPalette::WindowText), kMarkerWidth));
            p.setBrush(Qt::NoBrush);
            p.drawRoundedRect(r.adjusted(1, 1, -1, -1), 3, 3);
        }
        const QString label =
            (cell.firstDivergence ? QStringLiteral("▶ ") : QString()) + phaseCellLabel(cell);
        const QString shown = p.fontMetrics().elidedText(label, Qt::ElideRight, r.width() - 6);
        if (shown.size() > 3) {
            p.setPen(contrastingText(color));
            p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignCenter, shown);
        }
    }
}

void PhaseTimeline::mousePressEvent(QMouseEvent* event) {
    const int i = cellAt(event->position().toPoint());
    if (i >= 0 && cells_[static_cast<std::size_t>(i)].target) {
        emit tensorActivated(*cells_[static_cast<std::size_t>(i)].target);
        event->accept();
        return;
    }
    QWidget::mousePressEvent(event);
}

bool PhaseTimeline::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip && result_) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int i = cellAt(help->pos());
        if (i >= 0) {
            QToolTip::showText(help->globalPos(),
                               phaseCellToolTip(cells_[static_cast<std::size_t>(i)], *result_),
                               this, cellRect(static_cast<std::size_t>(i)));
        } else {
            QToolTip::hideText();
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace ttrace::ui
