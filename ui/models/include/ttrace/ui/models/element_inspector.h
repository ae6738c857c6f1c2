#pragma once
// Runs the element view's engine (ttrace/element_errors.h) off the GUI thread, one job at a
// time: reads one tensor of both bundles through the merge, finds its worst elements and its
// error along a dimension, and reports progress and the result as queued signals. A new job
// cancels the running one; whatever a superseded job still reports is dropped.
#include "ttrace/element_errors.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>

namespace ttrace::ui {

class ElementInspector : public QObject {
    Q_OBJECT
public:
    explicit ElementInspector(QObject* parent = nullptr);
    ~ElementInspector() override; // cancels a running job and waits for its thread

    // Inspects `query` in the pair of bundle directories (opened on the worker, kept for the
    // next job on the same pair).
    void start(const QString& reference, const QString& candidate, ElementQuery query);
    void cancel();
    [[nodiscard]] bool isRunning() const { return running_; }

signals:
    void started();
    void progress(double fraction);
    // Problems (a side that cannot be read) are in the report; `cancelled` set when asked.
    void finished(const ttrace::ElementReport& report);

private:
    void join();

    struct OpenPair; // the bundles of the last pair, reused while it stays the same
    std::shared_ptr<OpenPair> pair_;
    std::thread thread_;
    std::shared_ptr<std::atomic<bool>> cancel_;
    quint64 job_ = 0;
    bool running_ = false;
};

} // namespace ttrace::ui
