#include "ttrace/ui/main_window.h"

#include "ttrace/bundle.h"

#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>

namespace ttrace::ui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent) {
    setWindowTitle(tr("TTrace Explorer"));
    status_ = new QLabel(tr("Open a reference and a candidate bundle (File > Open)."), this);
    status_->setWordWrap(true);
    status_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    setCentralWidget(status_);
    auto* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open..."), QKeySequence::Open, this, &MainWindow::chooseAndOpen);
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    resize(900, 600);
}

void MainWindow::chooseAndOpen() {
    const auto reference = QFileDialog::getExistingDirectory(this, tr("Reference bundle"));
    if (reference.isEmpty()) {
        return;
    }
    const auto candidate = QFileDialog::getExistingDirectory(this, tr("Candidate bundle"));
    if (!candidate.isEmpty()) {
        openBundles(reference, candidate);
    }
}

void MainWindow::openBundles(const QString& reference, const QString& candidate) {
    QString text;
    for (const auto& [label, path] : {std::pair{tr("Reference"), reference},
                                      std::pair{tr("Candidate"), candidate}}) {
        const auto result = openBundle(path.toStdString());
        text += QStringLiteral("<h3>%1: %2</h3>").arg(label, path.toHtmlEscaped());
        if (result.bundle) {
            const auto& m = result.bundle->manifest();
            text += tr("%1 ranks, %2 modules, %3 tensors<br>")
                        .arg(m.worldSize)
                        .arg(m.modules.size())
                        .arg(result.bundle->tensors().size());
        }
        for (const auto& d : result.diagnostics) {
            text += QString::fromStdString(d.toString()).toHtmlEscaped() + "<br>";
        }
    }
    status_->setText(text);
}

} // namespace ttrace::ui
