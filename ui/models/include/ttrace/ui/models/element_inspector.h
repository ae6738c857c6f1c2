#pragma once
// Runs the element view's engine (ttrace/compare/element_errors.h) off the GUI thread, one job at a
// time on its JobRunner's thread: reads one tensor of both bundles through the merge, finds its
// worst elements and its error along a dimension, and reports progress and the result as
// signals on the GUI thread. A new job cancels the running one; the runner drops whatever a
// superseded job still reports.
#include "ttrace/compare/element_errors.h"
#include "ttrace/ui/models/job_runner.h"

#include <QObject>
#include <QString>

#include <memory>

namespace ttrace::ui {

class ElementInspector : public QObject {
    Q_OBJECT
public:
    explicit ElementInspector(QObject* parent = nullptr);
    ~ElementInspector() override; // cancels a running job and waits for its work

    // Inspects `query` in the pair of bundle directories (opened on the worker, kept for the
    // next job on the same pair).
    void start(const QString& reference, const QString& candidate, ElementQuery query);
    void cancel();
    [[nodiscard]] bool isRunning() const { return runner_.isRunning(); }

signals:
    void started();
    void progress(double fraction);
    // Problems (a side that cannot be read) are in the report; `cancelled` set when asked.
    void finished(const ttrace::ElementReport& report);

private:
    struct OpenPair; // the bundles of the last pair, reused while it stays the same
    // On the runner's thread: opens the pair (unless open) and inspects one tensor.
    void run(const JobContext& job, const QString& reference, const QString& candidate,
             const ElementQuery& query);

    std::shared_ptr<OpenPair> pair_;
    JobRunner runner_{QStringLiteral("ttrace-elements")};
};

} // namespace ttrace::ui
