// The explorer's open, measured on the real MainWindow (offscreen): time until the layer tree
// has rows, until every statistic is in (loading finished), and a second open of the same pair
// (the summary cache, after its content check), beside `ttrace diff` of the same pair.
//   explorer_open TTRACE_BIN REFERENCE CANDIDATE
// Prints one line: tree_s stats_s reopen_s diff_s diff_cached_s. The caller sets
// XDG_CACHE_HOME to an empty directory so the first open is uncached.
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/layer_tree_model.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QProcess>

#include <cstdio>

namespace {

struct OpenTimes {
    double tree = -1.0;
    double stats = -1.0;
};

OpenTimes timeOpen(ttrace::ui::MainWindow& window, const QString& ref, const QString& cand) {
    OpenTimes times;
    QElapsedTimer clock;
    QEventLoop loop;
    auto* model = window.model();
    const auto treeSeen = QObject::connect(model, &QAbstractItemModel::modelReset, &loop, [&] {
        if (times.tree < 0 && model->rowCount() > 0) {
            times.tree = static_cast<double>(clock.nsecsElapsed()) * 1e-9;
        }
    });
    const auto done =
        QObject::connect(&window, &ttrace::ui::MainWindow::loadingFinished, &loop, [&](bool) {
            times.stats = static_cast<double>(clock.nsecsElapsed()) * 1e-9;
            loop.quit();
        });
    clock.start();
    window.openBundles(ref, cand);
    loop.exec();
    QObject::disconnect(treeSeen);
    QObject::disconnect(done);
    return times;
}

double timeDiff(const QString& ttrace, const QString& ref, const QString& cand, bool cache) {
    QStringList args{QStringLiteral("diff"), QStringLiteral("--quiet"), ref, cand};
    if (!cache) {
        args.insert(1, QStringLiteral("--no-cache"));
    }
    QElapsedTimer clock;
    clock.start();
    QProcess p;
    p.start(ttrace, args);
    p.waitForFinished(-1);
    return static_cast<double>(clock.nsecsElapsed()) * 1e-9;
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    if (argc != 4) {
        std::fputs("usage: explorer_open TTRACE_BIN REFERENCE CANDIDATE\n", stderr);
        return 2;
    }
    const QString ttrace = QString::fromLocal8Bit(argv[1]);
    const QString ref = QString::fromLocal8Bit(argv[2]);
    const QString cand = QString::fromLocal8Bit(argv[3]);
    ttrace::ui::MainWindow window;
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.show();
    const auto first = timeOpen(window, ref, cand);
    const auto second = timeOpen(window, ref, cand);
    // The diff runs after the explorer filled the cache: its first run is a cached answer too,
    // so it runs with --no-cache for the uncached time.
    const double diff = timeDiff(ttrace, ref, cand, false);
    const double diffCached = timeDiff(ttrace, ref, cand, true);
    std::printf("%.3f %.3f %.3f %.3f %.3f\n", first.tree, first.stats, second.stats, diff,
                diffCached);
    return 0;
}
