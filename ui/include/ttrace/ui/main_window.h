#pragma once
// The explorer's main window: opens a reference and a candidate bundle.
#include <QMainWindow>
#include <QString>

class QLabel;

namespace ttrace::ui {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    // Opens both bundles; problems are shown in the window, never thrown.
    void openBundles(const QString& reference, const QString& candidate);

private:
    void chooseAndOpen();

    QLabel* status_ = nullptr;
};

} // namespace ttrace::ui
