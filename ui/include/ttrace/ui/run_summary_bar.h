#pragma once
// The strip at the top of the window: which bundles are compared (paths, ranks, parallel
// layout, precision) and the verdict as a coloured pill, so a screenshot is self-explanatory.
#include "ttrace/compare/diff_result.h"
#include "ttrace/io/manifest.h"

#include <QFrame>

class QLabel;

namespace ttrace::ui {

class RunSummaryBar : public QFrame {
    Q_OBJECT
public:
    explicit RunSummaryBar(QWidget* parent = nullptr);

    void setBundles(const QString& reference, const QString& candidate);
    // A manifest with world size 0 stands for a side that could not be opened: it is said so,
    // never described with the other side's metadata.
    void setManifests(const ttrace::Manifest& reference, const ttrace::Manifest& candidate);
    // No manifests for a result opened from a report: its summary describes both sides.
    void setReportSides(const ttrace::DiffSummary& summary, const QString& report);
    void setLoading(double fraction);
    void setFailed(const QString& why);
    void setCancelled();
    // The verdict under the current view: divergent modules and the first divergence.
    void setVerdict(const ttrace::DiffSummary& summary, int divergentModules,
                    const QString& firstDivergence);
    // A verdict that cannot be trusted or a pair not compared: the line `ttrace diff` ends with.
    void setInvalidVerdict(const QString& line);
    [[nodiscard]] QString verdictText() const;

private:
    void setPill(const QString& text, const QColor& color);

    QLabel* reference_;
    QLabel* candidate_;
    QLabel* verdict_;
    QString referencePath_;
    QString candidatePath_;
};

} // namespace ttrace::ui
