#pragma once
// The dock of grouped problems and warnings (kind, module, count; the raw lines one level
// down). Collapsed groups keep the window for the story; activating a group selects its module
// in the layer tree.
#include <QDockWidget>

class QTreeView;

namespace ttrace::ui {

class WarningsModel;

class WarningsDock : public QDockWidget {
    Q_OBJECT
public:
    WarningsDock(WarningsModel* model, QWidget* parent = nullptr);

    [[nodiscard]] QTreeView* view() const { return view_; }
    // Refreshes the title ("Warnings (3 groups, 40 findings)") after the model changed.
    void refresh();

signals:
    // A group or line was activated: show this module (and tensor, -1 when none).
    void moduleActivated(const QString& module, qlonglong tensor);

private:
    WarningsModel* model_;
    QTreeView* view_;
};

} // namespace ttrace::ui
