#include "ttrace/ui/drill_down_pane.h"

#include "ttrace/replay/localize_walk.h"
#include "ttrace/ui/error_histogram_plot.h"
#include "ttrace/ui/models/color_scale.h"
#include "ttrace/ui/models/layer_tree_model.h"
#include "ttrace/ui/models/number_format.h"
#include "ttrace/ui/models/replay_bars.h"
#include "ttrace/ui/models/stats_table_model.h"
#include "ttrace/ui/models/tensor_columns.h"
#include "ttrace/ui/ratio_history_plot.h"
#include "ttrace/ui/replay_comparison_plot.h"
#include "ttrace/ui/shard_error_plot.h"
#include "ttrace/ui/stats_table.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <cmath>

namespace ttrace::ui {
namespace {

QString qstr(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QString pillStyle(const QColor& color) {
    return QStringLiteral("QLabel { background: %1; color: %2; border-radius: 9px; "
                          "padding: 2px 10px; font-weight: bold; }")
        .arg(color.name(), contrastingText(color).name());
}

// Why a tensor could not be compared, cause first: the merge's finding (a hole and the ranks
// present), what the merge tried, then the bundle errors that leave ranks out (the file and
// rank to fix), never a bare "shape X vs shape X".
QStringList uncomparedCause(const TensorResult& t, const DiffResult* result) {
    QStringList lines;
    for (const auto& f : t.findings) {
        if (f.severity == Severity::Error || f.code == DiagnosticCode::MissingTensor) {
            lines << QStringLiteral("Why %1: %2").arg(qstr(statusName(t.status)), qstr(f.message));
        }
    }
    if (!t.invalid.empty()) {
        lines << QStringLiteral("Merge: %1").arg(qstr(t.invalid.toString()));
    }
    if (t.status == Status::Unresolved) {
        lines << QStringLiteral("Layout: %1").arg(qstr(t.resolution.toString()));
    }
    constexpr int kShownBundleErrors = 3;
    int shown = 0;
    for (const auto& d : result ? result->diagnostics : Diagnostics{}) {
        if (d.severity == Severity::Error && shown++ < kShownBundleErrors) {
            lines << QStringLiteral("Bundle error: %1").arg(qstr(d.toString()));
        }
    }
    return lines;
}

// What the core found about this tensor beyond its numbers: the error's shape and the bug
// class it suggests (divergent), or why it could not be compared (invalid, missing).
QString diagnosisText(const TensorResult& t, const DiffResult* result) {
    QStringList lines;
    for (const auto& s : t.signatures) {
        lines << QStringLiteral("Error shape: %1 (%2)").arg(qstr(s.summary), qstr(s.evidence));
    }
    if (!t.hint.text.empty()) {
        lines << QStringLiteral("Likely bug class: %1%2")
                     .arg(t.hint.bugClass.empty() ? QString() : qstr(t.hint.bugClass) + ": ",
                          qstr(t.hint.text));
    }
    if (t.status == Status::Invalid || t.status == Status::Missing ||
        t.status == Status::Unresolved) {
        lines << uncomparedCause(t, result);
    }
    return lines.join('\n');
}

// Two short lines, so the title fits half the pane: "Replayed param after step[weight]" over
// "0.02 × replay tolerance · captured 4.9e3".
QString replayTitle(const replay::TensorJudgement& peer, double captured) {
    const QString tensor =
        QStringLiteral("%1[%2]").arg(kindTitle(peer.id.kind), qstr(peer.id.index));
    QString ratios = DrillDownPane::tr("%1 × replay tolerance").arg(formatRatio(peer.ratio));
    if (!std::isnan(captured)) {
        ratios += DrillDownPane::tr(" · captured %1").arg(formatRatio(captured));
    }
    return DrillDownPane::tr("Replayed %1\n%2").arg(tensor, ratios);
}

} // namespace

DrillDownPane::DrillDownPane(const LayerTreeModel* model, QWidget* parent)
    : QWidget(parent)
    , model_(model)
    , title_(new QLabel(this))
    , subtitle_(new QLabel(this))
    , status_(new QLabel(this))
    , diagnosis_(new QLabel(this))
    , histogram_(new ErrorHistogramPlot(this))
    , history_(new RatioHistoryPlot(this))
    , shards_(new ShardErrorPlot(this))
    , stats_(new StatsTableModel(this))
    , table_(new StatsTable(stats_, this))
    , replay_(new ReplayComparisonPlot(this))
    , replayHistogram_(new ErrorHistogramPlot(this)) {
    setObjectName(QStringLiteral("drillDownPane"));
    QFont titleFont = font();
    titleFont.setPointSizeF(font().pointSizeF() * 1.25);
    titleFont.setBold(true);
    title_->setFont(titleFont);
    title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    subtitle_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    subtitle_->setStyleSheet(QStringLiteral("color: #4b5563;"));
    status_->setVisible(false);
    diagnosis_->setObjectName(QStringLiteral("diagnosis"));
    diagnosis_->setWordWrap(true);
    diagnosis_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    diagnosis_->setVisible(false);
    replayHistogram_->setObjectName(QStringLiteral("replayHistogram"));
    replayHistogram_->setAxisLabel(tr("|replayed − ref| per element / element replay tolerance"));

    auto* header = new QHBoxLayout;
    auto* titles = new QVBoxLayout;
    titles->setSpacing(2);
    titles->addWidget(title_);
    titles->addWidget(subtitle_);
    titles->addWidget(diagnosis_);
    header->addLayout(titles, 1);
    header->addWidget(status_, 0, Qt::AlignTop);

    auto* grid = new QGridLayout;
    grid->setSpacing(8);
    grid->addWidget(histogram_, 0, 0);
    grid->addWidget(history_, 0, 1);
    grid->addWidget(shards_, 1, 0);
    grid->addWidget(table_, 1, 1);
    // The replayed histogram sits under the captured one, on the same bins, so a divergence
    // that vanishes given the reference's inputs shows as bars moving left of the line.
    grid->addWidget(replayHistogram_, 2, 0);
    grid->addWidget(replay_, 2, 1);
    grid->setRowStretch(0, 1);
    grid->setRowStretch(1, 1);
    grid->setRowStretch(2, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    layout->addLayout(header);
    layout->addLayout(grid, 1);
    showTensor(std::nullopt);
}

void DrillDownPane::showTensor(std::optional<std::size_t> tensor) {
    const ResultSet& results = model_->results();
    if (tensor && *tensor >= results.size()) {
        tensor.reset();
    }
    current_ = tensor;
    if (!tensor) {
        title_->setText(tr("No tensor selected"));
        subtitle_->setText(tr("Select a cell in the layer tree to see its error distribution."));
        status_->setVisible(false);
        diagnosis_->setVisible(false);
        histogram_->setHistogram(nullptr);
        history_->setPoints({});
        shards_->setShards({}, 0.0);
        stats_->setTensor(std::nullopt);
        refreshReplay();
        return;
    }
    const TensorResult& t = results.tensor(*tensor);
    title_->setText(QStringLiteral("%1  ·  %2[%3]")
                        .arg(qstr(t.id.module), kindTitle(t.id.kind), qstr(t.id.index)));
    subtitle_->setText(tr("iteration %1, micro-batch %2  ·  %3 %4  ·  error %5 / tolerance %6 (%7)")
                           .arg(t.id.iteration)
                           .arg(t.id.microBatch < 0 ? tr("all") : QString::number(t.id.microBatch))
                           .arg(qstr(dtypeName(t.dtype)), qstr(shapeToString(t.shape)),
                                formatScientific(t.metrics.relError),
                                formatScientific(t.tolerance.value),
                                qstr(t.tolerance.source.name())));
    const bool bad = isFlagged(t.status);
    if (t.status == Status::Invalid || t.status == Status::Missing ||
        t.status == Status::Unresolved) {
        status_->setText(qstr(statusName(t.status)).toUpper());
    } else if (bad) {
        status_->setText(tr("%1 × tolerance").arg(formatRatio(t.ratio)));
    } else {
        status_->setText(tr("clean · %1 × tolerance").arg(formatRatio(t.ratio)));
    }
    status_->setStyleSheet(pillStyle(heatColor(t.status, t.ratio)));
    status_->setVisible(true);
    const QString diagnosis = diagnosisText(t, results.final());
    diagnosis_->setText(diagnosis);
    diagnosis_->setVisible(!diagnosis.isEmpty());

    histogram_->setHistogram(&t.histogram);
    std::vector<RatioPoint> points;
    for (const auto i : results.history(t.id, true)) {
        const auto& h = results.tensor(i);
        points.push_back({h.id.iteration, h.id.microBatch, h.ratio, i == *tensor});
    }
    history_->setPoints(points);
    shards_->setShards(t.metrics.shards, t.tolerance.value);
    stats_->setTensor(t);
    refreshReplay();
}

namespace {

// The replay to show beside a tensor: its module's replay of the tensor's own iteration (or the
// step replay over every parameter that badged the module then); failing that, the module's
// latest replay of another iteration, which the titles label as such.
const replay::ModuleVerdict* replayFor(const LocalizeVerdicts& localize, const TensorId& id) {
    const std::int64_t iteration = replay::divergenceStartOf(id).iteration;
    if (const auto* v = localize.verdict(id.module, iteration)) {
        return v;
    }
    if (isGuiltyBadge(localize.badge(id.module, iteration))) {
        if (const auto* step = localize.stepVerdict(iteration)) {
            return step;
        }
    }
    return localize.verdict(id.module);
}

} // namespace

void DrillDownPane::refreshReplay() {
    const auto& results = model_->results();
    const auto& localize = model_->localize();
    // No tensor shown, no replay (the step replay over every parameter is named "").
    const TensorId* id = current_ ? &results.tensor(*current_).id : nullptr;
    const replay::ModuleVerdict* v = id ? replayFor(localize, *id) : nullptr;
    replay_->setVisible(v != nullptr);
    replayHistogram_->setVisible(v != nullptr);
    histogram_->setTitle(v ? tr("Captured: element errors in tolerance units")
                           : tr("Element errors in tolerance units"));
    if (!v) {
        replayHistogram_->setHistogram(nullptr);
        return;
    }
    const QString module = qstr(id->module);
    const std::int64_t shownIteration = replay::divergenceStartOf(*id).iteration;
    const std::int64_t replayed = v->suspect.iteration;
    // Every replay is labelled with the iteration it judged; one of another iteration than the
    // shown tensor's says so, so it is never read as this tensor's.
    const QString when = replayed == shownIteration
                             ? tr("iteration %1, %2")
                                   .arg(replayed)
                                   .arg(qstr(replay::localizePhaseName(v->suspect.phase)))
                             : tr("iteration %1, %2 — not this tensor's iteration %3")
                                   .arg(replayed)
                                   .arg(qstr(replay::localizePhaseName(v->suspect.phase)))
                                   .arg(shownIteration);
    replay_->setComparison(
        tr("Replayed with the reference's inputs (%1)\n%2: %3")
            .arg(when, module, localizeBadgeText(localize.badge(id->module, replayed))),
        replayBars(results, *v, id->module));
    const replay::TensorJudgement* peer =
        replayed == shownIteration ? replayedPeer(*v, *id) : nullptr;
    static const ErrorHistogram kNone; // "no histogram", not "select a tensor"
    replayHistogram_->setHistogram(peer ? &peer->histogram : &kNone);
    replayHistogram_->setTitle(peer ? replayTitle(*peer, capturedRatio(results, peer->id))
                               : replayed == shownIteration
                                   ? tr("Replayed: no tensor of %1 returned").arg(module)
                                   : tr("Replayed iteration %1 only; no replay of iteration %2")
                                         .arg(replayed)
                                         .arg(shownIteration));
}

void DrillDownPane::replotNow() {
    replay_->replotNow();
    replayHistogram_->replotNow();
    histogram_->replotNow();
    history_->replotNow();
    shards_->replotNow();
}

} // namespace ttrace::ui
