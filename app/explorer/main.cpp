// ttrace-explorer: the desktop front end.
//   ttrace-explorer [--screenshot FILE] [--markdown FILE] [REFERENCE CANDIDATE]
#include "ttrace/ui/headless_export.h"
#include "ttrace/ui/main_window.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QStyleFactory>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Export-only runs must work without a display (CI, ssh): choose the offscreen platform before
// QApplication exists, unless the user picked a platform.
bool wantsHeadless(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--screenshot", 12) == 0 ||
            std::strncmp(argv[i], "--markdown", 10) == 0) {
            return true;
        }
    }
    return false;
}

// --help and --version only print, so they must work over ssh too: no display needed.
bool onlyPrints(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        for (const char* flag : {"--help", "-h", "-?", "--help-all", "--version", "-v"}) {
            if (std::strcmp(argv[i], flag) == 0) {
                return true;
            }
        }
    }
    return false;
}

} // namespace

int main(int argc, char** argv) {
    const bool headless = wantsHeadless(argc, argv);
    if ((headless || onlyPrints(argc, argv)) && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("TTrace Explorer"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/ttrace/ttrace-explorer.png")));
    QApplication::setOrganizationName(QStringLiteral("ttrace"));
    QApplication::setApplicationVersion(QStringLiteral(TTRACE_VERSION));
    // Lets a desktop match the window to the installed .desktop entry and its icon.
    QGuiApplication::setDesktopFileName(QStringLiteral(TTRACE_APP_ID));
    // One look everywhere, so screenshots from any desktop or CI match.
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Explore where a distributed training run diverges from its reference.\n"
                       "With --screenshot/--markdown: load, write the files, print their paths "
                       "and exit (0 ok, 2 a bundle is broken, 1 other failure)."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshot(
        QStringLiteral("screenshot"),
        QStringLiteral("Render the window to a PNG once loading finishes, then exit."),
        QStringLiteral("FILE"));
    const QCommandLineOption markdown(
        QStringLiteral("markdown"),
        QStringLiteral("Write a Markdown report once loading finishes, then exit."),
        QStringLiteral("FILE"));
    parser.addOption(screenshot);
    parser.addOption(markdown);
    parser.addPositionalArgument(QStringLiteral("reference"), QStringLiteral("reference bundle"));
    parser.addPositionalArgument(QStringLiteral("candidate"), QStringLiteral("candidate bundle"));
    parser.process(app);

    const auto args = parser.positionalArguments();
    if (!args.isEmpty() && args.size() != 2) {
        std::fputs("ttrace-explorer: give both a REFERENCE and a CANDIDATE bundle\n", stderr);
        return 1;
    }
    if (headless && args.size() != 2) {
        std::fputs("ttrace-explorer: --screenshot/--markdown need REFERENCE and CANDIDATE\n",
                   stderr);
        return 1;
    }

    ttrace::ui::MainWindow window;
    ttrace::ui::HeadlessExport* exporter = nullptr;
    if (headless) {
        // Laid out and rendered at a fixed size, never shown on a screen.
        window.setAttribute(Qt::WA_DontShowOnScreen);
        window.resize(1600, 1000);
        exporter = new ttrace::ui::HeadlessExport(&window, parser.value(screenshot),
                                                  parser.value(markdown), &window);
        QObject::connect(exporter, &ttrace::ui::HeadlessExport::finished, &app,
                         [](int code) { QApplication::exit(code); });
    }
    window.show();
    if (args.size() == 2) {
        window.openBundles(args[0], args[1]);
    }
    return QApplication::exec();
}
