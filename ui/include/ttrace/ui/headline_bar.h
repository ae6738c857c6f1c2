#pragma once
// The story in one strip under the run summary: where the run first diverges in time
// (iteration, phase, module, tensor kind, ranks) and, once localized, which module or phase
// holds the bug. Clicking it selects the first divergence.
#include "ttrace/ui/models/story_headline.h"

#include <QFrame>

class QLabel;

namespace ttrace::ui {

class HeadlineBar : public QFrame {
    Q_OBJECT
public:
    explicit HeadlineBar(QWidget* parent = nullptr);

    void setHeadline(const StoryHeadline& headline);
    // The localize conclusion (empty hides the line); `guilty` colours it as a finding.
    void setConclusion(const QString& text, bool guilty);
    void clear();

    [[nodiscard]] const StoryHeadline& headline() const { return headline_; }
    [[nodiscard]] QString text() const;
    [[nodiscard]] QString conclusion() const;

signals:
    void activated();

protected:
    void mousePressEvent(QMouseEvent* event) override;

private:

    StoryHeadline headline_;
    QLabel* story_;
    QLabel* conclusion_;
};

} // namespace ttrace::ui
