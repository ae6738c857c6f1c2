#include "ttrace/ui/run_summary_bar.h"

#include "ttrace/compare/environment_diff.h"
#include "ttrace/compare/run_layout.h"
#include "ttrace/ui/models/color_scale.h"
#include "ttrace/ui/models/number_format.h"

#include <QDir>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>

namespace ttrace::ui {
namespace {

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

// The layout in the core's words (run_layout.h), as the CLI and the reports give it: either
// side may be distributed.
QString describe(const Manifest& m) {
    if (m.worldSize <= 0) {
        return QObject::tr("not opened: see the problems below");
    }
    QStringList parts;
    parts << qstr(layoutText(m));
    if (!m.precision.empty()) {
        parts << qstr(m.precision);
    }
    if (!m.model.empty()) {
        parts << qstr(m.model);
    }
    return parts.join(QStringLiteral("  ·  "));
}

// Bundle paths copied from clusters can be very long; the end (the bundle's own name) is what
// tells runs apart, so a long path keeps its tail. The full path is in the tooltip.
constexpr qsizetype kMaxShownPath = 64;

QString shownPath(const QString& path) {
    const QString native = QDir::toNativeSeparators(path);
    return native.size() <= kMaxShownPath ? native
                                          : QStringLiteral("…") + native.right(kMaxShownPath - 1);
}

QString pathLine(const QString& role, const QString& path, const QString& details) {
    QString line = QStringLiteral("<span style='color:#6b7280'>%1</span>&nbsp;&nbsp;<b>%2</b>")
                       .arg(role.toHtmlEscaped(), shownPath(path).toHtmlEscaped());
    if (!details.isEmpty()) {
        line += QStringLiteral("&nbsp;&nbsp;<span style='color:#4b5563'>%1</span>")
                    .arg(details.toHtmlEscaped());
    }
    return line;
}

} // namespace

RunSummaryBar::RunSummaryBar(QWidget* parent)
    : QFrame(parent)
    , reference_(new QLabel(this))
    , candidate_(new QLabel(this))
    , verdict_(new QLabel(this)) {
    setObjectName(QStringLiteral("runSummaryBar"));
    setStyleSheet(QStringLiteral("#runSummaryBar { background: #f8fafc; border-bottom: 1px solid "
                                 "#e2e8f0; }"));
    for (auto* l : {reference_, candidate_}) {
        l->setTextFormat(Qt::RichText);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
        // The header must never widen the window: screenshots for bug reports have a fixed
        // size whatever the paths and model description are. Too long a line is clipped.
        l->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
        l->setMinimumWidth(0);
    }
    verdict_->setObjectName(QStringLiteral("verdictPill"));
    verdict_->setAlignment(Qt::AlignCenter);
    // The CLI's verdict lines are long: wrapped, the pill never widens the window.
    verdict_->setWordWrap(true);
    verdict_->setMaximumWidth(520);
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(12, 8, 12, 8);
    grid->setVerticalSpacing(2);
    grid->addWidget(reference_, 0, 0);
    grid->addWidget(candidate_, 1, 0);
    grid->addWidget(verdict_, 0, 1, 2, 1, Qt::AlignRight | Qt::AlignVCenter);
    grid->setColumnStretch(0, 1);
    setBundles({}, {});
}

void RunSummaryBar::setBundles(const QString& reference, const QString& candidate) {
    referencePath_ = reference;
    candidatePath_ = candidate;
    if (reference.isEmpty()) {
        reference_->setText(tr("<b>No bundles open.</b> Use File &gt; Open, drop two bundle "
                               "folders here, or pass REFERENCE CANDIDATE on the command line."));
        candidate_->clear();
        verdict_->hide();
        return;
    }
    reference_->setText(pathLine(tr("Reference"), reference, {}));
    candidate_->setText(pathLine(tr("Candidate"), candidate, {}));
}

void RunSummaryBar::setManifests(const Manifest& reference, const Manifest& candidate) {
    QString referenceDetails = describe(reference);
    if (const auto note = distributedReferenceNote(reference.worldSize); !note.empty()) {
        referenceDetails += QStringLiteral("  ·  ") + qstr(note);
    }
    reference_->setText(pathLine(tr("Reference"), referencePath_, referenceDetails));
    QString details = describe(candidate);
    // A cross-version pair: what differs, in the core's words (the CLI's `environment` line).
    QStringList changes;
    for (const auto& change : environmentDiff(reference, candidate).changes) {
        changes << qstr(change.toString());
    }
    if (!changes.isEmpty()) {
        details += tr("  ·  differs: %1").arg(changes.join(QStringLiteral("; ")));
    }
    candidate_->setText(pathLine(tr("Candidate"), candidatePath_, details));
    reference_->setToolTip(QDir::toNativeSeparators(referencePath_));
    candidate_->setToolTip(QDir::toNativeSeparators(candidatePath_));
}

void RunSummaryBar::setReportSides(const DiffSummary& summary, const QString& report) {
    const auto details = [&](const std::string& layout) {
        QStringList parts;
        if (!layout.empty()) {
            parts << qstr(layout);
        }
        if (!summary.precision.empty()) {
            parts << qstr(summary.precision);
        }
        parts << tr("from the report %1").arg(QFileInfo(report).fileName());
        return parts.join(QStringLiteral("  ·  "));
    };
    reference_->setText(
        pathLine(tr("Reference"), referencePath_, details(sideLayoutText(summary, true))));
    candidate_->setText(
        pathLine(tr("Candidate"), candidatePath_, details(sideLayoutText(summary, false))));
    reference_->setToolTip(QDir::toNativeSeparators(referencePath_));
    candidate_->setToolTip(QDir::toNativeSeparators(candidatePath_));
}

void RunSummaryBar::setPill(const QString& text, const QColor& color) {
    verdict_->setText(text);
    verdict_->setStyleSheet(QStringLiteral("QLabel { background: %1; color: %2; border-radius: "
                                           "12px; padding: 5px 14px; font-weight: bold; }")
                                .arg(color.name(), contrastingText(color).name()));
    verdict_->show();
}

void RunSummaryBar::setLoading(double fraction) {
    setPill(tr("Comparing… %1 %").arg(static_cast<int>(fraction * 100.0)), QColor(0xe2e8f0));
}

void RunSummaryBar::setFailed(const QString& why) {
    setPill(why, heatColor(Status::Invalid, 0));
}

void RunSummaryBar::setInvalidVerdict(const QString& line) {
    setPill(line, heatColor(Status::Invalid, 0.0));
}

void RunSummaryBar::setCancelled() {
    setPill(tr("Cancelled"), QColor(0xe2e8f0));
}

void RunSummaryBar::setVerdict(const DiffSummary& summary, int divergentModules,
                               const QString& firstDivergence) {
    if (divergentModules == 0 && summary.divergent == 0 && summary.invalid == 0 &&
        summary.unresolved == 0 && summary.provisionalOverBound == 0 &&
        summary.unstableOverBound == 0) {
        setPill(tr("CLEAN  ·  %1 tensors within tolerance  ·  worst ratio %2")
                    .arg(summary.compared)
                    .arg(formatRatio(summary.maxRatio)),
                heatColor(0.05));
        return;
    }
    if (summary.drift > 0 && summary.divergent == 0 && summary.invalid == 0 &&
        summary.unresolved == 0 && summary.provisionalOverBound == 0 &&
        summary.unstableOverBound == 0) {
        setPill(tr("DRIFT  ·  %1 of %2 tensors within %3x tolerance where kernels differ")
                    .arg(summary.drift)
                    .arg(summary.compared)
                    .arg(formatRatio(summary.driftBound)),
                heatColor(Status::Drift, summary.driftMaxRatio));
        return;
    }
    QString text = summary.divergent > 0 ? tr("DIVERGENT  ·  %1 of %2 tensors  ·  worst ratio %3")
                                               .arg(summary.divergent)
                                               .arg(summary.compared)
                                               .arg(formatRatio(summary.maxRatio))
                                         : tr("PROBLEMS");
    if (summary.invalid > 0) {
        text += tr("  ·  %1 invalid").arg(summary.invalid);
    }
    if (summary.unresolved > 0) {
        text += tr("  ·  %1 unresolved").arg(summary.unresolved); // inferred layouts not settled
    }
    if (summary.provisionalOverBound > 0) { // judged by the analytic bound only
        text += tr("  ·  %1 provisional over the bound").arg(summary.provisionalOverBound);
    }
    if (summary.unstableOverBound > 0) { // over a floor whose variants disagree by > 100x
        text += tr("  ·  %1 provisional over an unstable floor").arg(summary.unstableOverBound);
    }
    if (!firstDivergence.isEmpty()) {
        text += tr("  ·  first: %1").arg(firstDivergence);
    }
    setPill(text, summary.divergent > 0 ? heatColor(100.0) : heatColor(Status::Invalid, 0.0));
}

QString RunSummaryBar::verdictText() const {
    return verdict_->isVisible() ? verdict_->text() : QString();
}

} // namespace ttrace::ui
