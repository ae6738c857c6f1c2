#pragma once
// A banner above the panes listing what is wrong with the bundles: every diagnostic the engine
// reported (which file, which rank, what), errors first. Hidden when there is nothing to say.
#include "ttrace/io/diagnostic.h"

#include <QFrame>
#include <QStringList>

class QAction;
class QLabel;
class QScrollArea;
class QToolButton;

namespace ttrace::ui {

class ProblemsBanner : public QFrame {
    Q_OBJECT
public:
    explicit ProblemsBanner(QWidget* parent = nullptr);

    // `fatal`: the bundles could not be compared at all (headline says so).
    void setProblems(const QString& headline, const ttrace::Diagnostics& problems);
    void clear();
    // A button offering the fix (e.g. swap the bundles); null removes it. Not owned.
    void setFixAction(QAction* action);
    [[nodiscard]] QToolButton* fixButton() const { return fix_; }
    // One line per diagnostic, as shown ("error: rank 1: rank-00001.h5 is missing").
    [[nodiscard]] const QStringList& lines() const { return lines_; }
    // Everything the banner shows as plain text (headline and lines).
    [[nodiscard]] QString text() const;
    [[nodiscard]] bool hasErrors() const { return errors_ > 0; }

private:
    QLabel* headline_;
    QLabel* details_;
    QScrollArea* detailsScroll_;
    QToolButton* close_;
    QToolButton* fix_;
    QStringList lines_;
    int errors_ = 0;
};

} // namespace ttrace::ui
