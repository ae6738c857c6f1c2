// One open of a bundle pair in the real MainWindow (offscreen), in this process: the time until
// the layer tree has rows, until a cached comparison is shown (provisional, found from the
// bundles' file stamps) and until every statistic is in and checked (loading finished). Run
// in a fresh process per open, as a user reopening the explorer would (explorer_open.py).
//   explorer_open REFERENCE CANDIDATE
// Prints one line: tree_s shown_s stats_s ok (shown_s is -1 when nothing cached was shown).
//   explorer_open --engine REFERENCE CANDIDATE
// Prints the seconds of an uncached diffBundleDirs in this process, with no window.
// Times start at openBundles, after the application and window exist.
#include "ttrace/compare/diff_engine.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>

#include <cstdio>
#include <filesystem>

namespace {

struct OpenTimes {
    double tree = -1.0;
    double shown = -1.0;
    double stats = -1.0;
    bool ok = false;
};

double seconds(const QElapsedTimer& clock) {
    return static_cast<double>(clock.nsecsElapsed()) * 1e-9;
}

OpenTimes timeOpen(ttrace::ui::MainWindow& window, const QString& ref, const QString& cand) {
    OpenTimes times;
    QElapsedTimer clock;
    QEventLoop loop;
    auto* model = window.model();
    QObject::connect(model, &QAbstractItemModel::modelReset, &loop, [&] {
        if (times.tree < 0 && model->rowCount() > 0) {
            times.tree = seconds(clock);
        }
    });
    QObject::connect(&window, &ttrace::ui::MainWindow::provisionalShown, &loop,
                     [&] { times.shown = seconds(clock); });
    QObject::connect(&window, &ttrace::ui::MainWindow::loadingFinished, &loop, [&](bool ok) {
        times.stats = seconds(clock);
        times.ok = ok;
        loop.quit();
    });
    clock.start();
    window.openBundles(ref, cand);
    loop.exec();
    return times;
}

// The engine alone in this process (QApplication created, no window): separates what the
// GUI costs from what the process costs, against `ttrace diff --no-cache`.
double timeEngine(const QString& ref, const QString& cand) {
    ttrace::DiffOptions options;
    options.useCache = false;
    QElapsedTimer clock;
    clock.start();
    const auto result = ttrace::diffBundleDirs(std::filesystem::path(ref.toStdString()),
                                               std::filesystem::path(cand.toStdString()), options);
    return result.tensors.empty() ? -1.0 : seconds(clock);
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    if (argc == 4 && QByteArray(argv[1]) == "--engine") {
        std::printf("%.3f\n",
                    timeEngine(QString::fromLocal8Bit(argv[2]), QString::fromLocal8Bit(argv[3])));
        return 0;
    }
    if (argc != 3) {
        std::fputs("usage: explorer_open [--engine] REFERENCE CANDIDATE\n", stderr);
        return 2;
    }
    ttrace::ui::MainWindow window;
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.show();
    const auto t =
        timeOpen(window, QString::fromLocal8Bit(argv[1]), QString::fromLocal8Bit(argv[2]));
    std::printf("%.3f %.3f %.3f %d\n", t.tree, t.shown, t.stats, t.ok ? 1 : 0);
    return 0;
}
