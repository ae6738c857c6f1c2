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
    // A pair that was not compared (refused, or a bundle that cannot be opened): `text` is the
    // story, in the words `ttrace diff` uses, and there is no divergence to select.
    void setRefused(const QString& text);
    // Shown above the story when the verdict cannot be trusted as it stands (invalid tensors
    // before the first divergence, bundle errors); empty hides it.
    void setCaveat(const QString& text);
    // The localize conclusion (empty hides the line); `guilty` colours it as a finding.
    void setConclusion(const QString& text, bool guilty);
    void clear();

    [[nodiscard]] const StoryHeadline& headline() const { return headline_; }
    [[nodiscard]] QString text() const;
    [[nodiscard]] QString conclusion() const;
    [[nodiscard]] QString caveat() const;

signals:
    void activated();

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    // The main window's layout gives the central widget's rows their size hints, not their
    // height for the actual width: without this a story that wraps to more lines than its hint
    // is squeezed and its first line clipped. The bar's minimum height follows its labels.
    void fitHeightToWidth();
    // Sets `label` to `text` cut at a word to at most `maxLines` lines at the bar's width (the
    // full text in its tooltip), so a long list never pushes the window off a laptop screen.
    void showElided(QLabel* label, const QString& text, int maxLines) const;
    void refreshTexts();

    StoryHeadline headline_;
    QLabel* caveat_;
    QLabel* story_;
    QLabel* conclusion_;
    // The full texts: the labels may show them cut short.
    QString storyText_;
    QString caveatText_;
    QString conclusionText_;
};

} // namespace ttrace::ui
