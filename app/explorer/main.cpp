// ttrace-explorer: the desktop front end.
//   ttrace-explorer [--screenshot FILE] [--markdown FILE] [--agent HOST:PORT --token-file FILE]
//                   [--localize MODULE|all] [REFERENCE CANDIDATE]
//   ttrace-explorer [--screenshot FILE] [--markdown FILE] --report DIFF.json [--report-cache FILE]
#include "ttrace/io/exit_code.h"
#include "ttrace/ui/headless_export.h"
#include "ttrace/ui/localize_ui.h"
#include "ttrace/ui/main_window.h"
#include "ttrace/ui/models/agent_target.h"

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

struct ExportFiles {
    QString screenshot, markdown;
};

// `--report FILE`: a comparison made elsewhere, shown (or exported) without its bundles.
int openReportOnly(const QCommandLineParser& parser, const QCommandLineOption& report,
                   const QCommandLineOption& reportCache, const QCommandLineOption& localize,
                   const QCommandLineOption& agent, bool headless, const ExportFiles& files) {
    const auto usage = [](const char* text) {
        std::fputs(text, stderr);
        return ttrace::exitStatus(ttrace::ExitCode::BadInput); // usage, as `ttrace` says it
    };
    if (!parser.isSet(report)) {
        return usage("ttrace-explorer: --report-cache needs --report\n");
    }
    if (!parser.positionalArguments().isEmpty()) {
        return usage("ttrace-explorer: give either --report or REFERENCE CANDIDATE\n");
    }
    if (parser.isSet(localize) || parser.isSet(agent)) {
        return usage("ttrace-explorer: --localize and --agent need the bundles, not --report\n");
    }
    ttrace::ui::MainWindow window;
    if (headless) {
        window.setAttribute(Qt::WA_DontShowOnScreen);
        window.resize(1600, 1000);
        auto* exporter =
            new ttrace::ui::HeadlessExport(&window, files.screenshot, files.markdown, &window);
        QObject::connect(exporter, &ttrace::ui::HeadlessExport::finished, qApp,
                         [](int code) { QApplication::exit(code); });
    }
    window.show();
    window.openReport(parser.value(report), parser.value(reportCache));
    return QApplication::exec();
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
    parser.setApplicationDescription(QStringLiteral(
        "Explore where a distributed training run diverges from its reference.\n"
        "With --screenshot/--markdown: load, write the files, print their paths "
        "and exit as `ttrace diff` does (0 clean, 1 divergent, 2 invalid input or a file that "
        "cannot be written, 3 an inferred placement unresolved)."));
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
    const QCommandLineOption agent(
        QStringLiteral("agent"),
        QStringLiteral("Connect to the localize agent at HOST:PORT (docs/localize.md)."),
        QStringLiteral("HOST:PORT"));
    const QCommandLineOption tokenFile(QStringLiteral("token-file"),
                                       QStringLiteral("The agent's token file."),
                                       QStringLiteral("FILE"));
    const QCommandLineOption localize(
        QStringLiteral("localize"),
        QStringLiteral("Once compared, localize MODULE, or 'all' (the walk from the first "
                       "divergence), before --screenshot/--markdown are written."),
        QStringLiteral("MODULE|all"));
    const QCommandLineOption report(
        QStringLiteral("report"),
        QStringLiteral("Open the JSON report of `ttrace diff --json` or `ttrace-mpi diff --json` "
                       "(or a summary cache entry) without the bundles: everything but "
                       "element-level drill-down and localize."),
        QStringLiteral("FILE"));
    const QCommandLineOption reportCache(
        QStringLiteral("report-cache"),
        QStringLiteral("With --report: the summary cache entry of the same comparison, which "
                       "must match the report."),
        QStringLiteral("FILE"));
    parser.addOption(screenshot);
    parser.addOption(markdown);
    parser.addOption(report);
    parser.addOption(reportCache);
    parser.addOption(agent);
    parser.addOption(tokenFile);
    parser.addOption(localize);
    parser.addPositionalArgument(QStringLiteral("reference"), QStringLiteral("reference bundle"));
    parser.addPositionalArgument(QStringLiteral("candidate"), QStringLiteral("candidate bundle"));
    parser.process(app);

    const auto args = parser.positionalArguments();
    if (parser.isSet(report) || parser.isSet(reportCache)) {
        return openReportOnly(parser, report, reportCache, localize, agent, headless,
                              {parser.value(screenshot), parser.value(markdown)});
    }
    if (!args.isEmpty() && args.size() != 2) {
        std::fputs("ttrace-explorer: give both a REFERENCE and a CANDIDATE bundle\n", stderr);
        return ttrace::exitStatus(ttrace::ExitCode::BadInput); // usage, as `ttrace` says it
    }
    if (headless && args.size() != 2) {
        std::fputs("ttrace-explorer: --screenshot/--markdown need REFERENCE and CANDIDATE (or "
                   "--report)\n",
                   stderr);
        return ttrace::exitStatus(ttrace::ExitCode::BadInput); // usage, as `ttrace` says it
    }

    ttrace::ui::AgentTarget target;
    if (parser.isSet(agent) &&
        !ttrace::ui::AgentTarget::parseHostPort(parser.value(agent), target)) {
        std::fputs("ttrace-explorer: --agent wants HOST:PORT\n", stderr);
        return ttrace::exitStatus(ttrace::ExitCode::BadInput); // usage, as `ttrace` says it
    }
    target.tokenFile = parser.value(tokenFile);
    if (parser.isSet(agent) && target.tokenFile.isEmpty()) {
        std::fputs("ttrace-explorer: --agent needs --token-file\n", stderr);
        return ttrace::exitStatus(ttrace::ExitCode::BadInput); // usage, as `ttrace` says it
    }
    if (parser.isSet(localize) && args.size() != 2) {
        std::fputs("ttrace-explorer: --localize needs REFERENCE and CANDIDATE\n", stderr);
        return ttrace::exitStatus(ttrace::ExitCode::BadInput); // usage, as `ttrace` says it
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
        window.setStartupLocalize(parser.value(localize));
        window.openBundles(args[0], args[1]);
        if (!parser.isSet(agent) && parser.isSet(localize)) {
            target = ttrace::ui::rememberedAgent(args[1]); // the agent last used with it
        }
    }
    if (target.isComplete()) {
        window.localizeUi()->connectTo(target);
    }
    return QApplication::exec();
}
