#pragma once
// The progress and Cancel of one kind of background job (loading, localizing, exporting,
// inspecting elements): an optional text, a bar and a button, shown while the job runs and
// hidden when it ends. The button triggers the job's cancel action, so the menu entry and its
// shortcut stay one path.
#include <QString>
#include <QWidget>

class QAction;
class QLabel;
class QProgressBar;
class QPushButton;

namespace ttrace::ui {

class ProgressCancelWidget : public QWidget {
    Q_OBJECT
public:
    // `cancel` is the job's cancel action: enabled only while the job runs.
    ProgressCancelWidget(QAction* cancel, const QString& buttonText, QWidget* parent = nullptr);

    [[nodiscard]] QAction* cancelAction() const { return cancel_; }
    [[nodiscard]] QProgressBar* bar() const { return bar_; }
    [[nodiscard]] QPushButton* cancelButton() const { return button_; }
    [[nodiscard]] QLabel* label() const { return label_; }
    [[nodiscard]] QString text() const;

    // Shows the widget with the bar at 0 of `maximum` and enables the cancel action.
    void begin(int maximum);
    void setRange(int maximum);
    void setValue(int value);
    [[nodiscard]] int value() const;
    [[nodiscard]] int maximum() const;
    // The text beside the bar (hidden while empty).
    void setText(const QString& text);
    // Hides the widget and disables the cancel action.
    void end();

private:
    QAction* cancel_;
    QLabel* label_;
    QProgressBar* bar_;
    QPushButton* button_;
};

} // namespace ttrace::ui
