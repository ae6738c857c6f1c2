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

// The command line's options, made once and shared by the parser and the runs.
struct Options {
    QCommandLineOption screenshot{
        QStringLiteral("screenshot"),
        QStringLiteral("Render the window to a PNG once loading finishes, then exit."),
        QStringLiteral("FILE")};
    QCommandLineOption markdown{
        QStringLiteral("markdown"),
        QStringLiteral("Write a Markdown report once loading finishes, then exit."),
        QStringLiteral("FILE")};
    QCommandLineOption agent{
        QStringLiteral("agent"),
        QStringLiteral("Connect to the localize agent at HOST:PORT (docs/localize.md)."),
        QStringLiteral("HOST:PORT")};
    QCommandLineOption tokenFile{QStringLiteral("token-file"),
                                 QStringLiteral("The agent's token file."), QStringLiteral("FILE")};
    QCommandLineOption localize{
        QStringLiteral("localize"),
        QStringLiteral("Once compared, localize MODULE, or 'all' (the walk from the first "
                       "divergence), before --screenshot/--markdown are written."),
        QStringLiteral("MODULE|all")};
    QCommandLineOption report{
        QStringLiteral("report"),
        QStringLiteral("Open the JSON report of `ttrace diff --json` or `ttrace-mpi diff --json` "
                       "(or a summary cache entry) without the bundles: everything but "
                       "element-level drill-down and localize."),
        QStringLiteral("FILE")};
    QCommandLineOption reportCache{
        QStringLiteral("report-cache"),
        QStringLiteral("With --report: the summary cache entry of the same comparison, which "
                       "must match the report."),
        QStringLiteral("FILE")};
};

void addOptions(QCommandLineParser& parser, const Options& o) {
    parser.setApplicationDescription(QStringLiteral(
        "Explore where a distributed training run diverges from its reference.\n"
        "With --screenshot/--markdown: load, write the files, print their paths "
        "and exit as `ttrace diff` does (0 clean, 1 divergent, 2 invalid input or a file that "
        "cannot be written, 3 an inferred placement unresolved)."));
    parser.addHelpOption();
    parser.addVersionOption();
    for (const auto* option : {&o.screenshot, &o.markdown, &o.report, &o.reportCache, &o.agent,
                               &o.tokenFile, &o.localize}) {
        parser.addOption(*option);
    }
    parser.addPositionalArgument(QStringLiteral("reference"), QStringLiteral("reference bundle"));
    parser.addPositionalArgument(QStringLiteral("candidate"), QStringLiteral("candidate bundle"));
}

int usage(const char* text) {
    std::fputs(text, stderr);
    return ttrace::exitStatus(ttrace::ExitCode::BadInput); // usage, as `ttrace` says it
}

// Export-only: laid out and rendered at a fixed size, never shown on a screen; the exporter
// ends the event loop with its exit code.
void exportHeadless(ttrace::ui::MainWindow& window, const QCommandLineParser& parser,
                    const Options& o) {
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.resize(1600, 1000);
    auto* exporter = new ttrace::ui::HeadlessExport(&window, parser.value(o.screenshot),
                                                    parser.value(o.markdown), &window);
    QObject::connect(exporter, &ttrace::ui::HeadlessExport::finished, qApp,
                     [](int code) { QApplication::exit(code); });
}

// `--report FILE`: a comparison made elsewhere, shown (or exported) without its bundles.
int openReportOnly(const QCommandLineParser& parser, const Options& o, bool headless) {
    if (!parser.isSet(o.report)) {
        return usage("ttrace-explorer: --report-cache needs --report\n");
    }
    if (!parser.positionalArguments().isEmpty()) {
        return usage("ttrace-explorer: give either --report or REFERENCE CANDIDATE\n");
    }
    if (parser.isSet(o.localize) || parser.isSet(o.agent)) {
        return usage("ttrace-explorer: --localize and --agent need the bundles, not --report\n");
    }
    ttrace::ui::MainWindow window;
    if (headless) {
        exportHeadless(window, parser, o);
    }
    window.show();
    window.openReport(parser.value(o.report), parser.value(o.reportCache));
    return QApplication::exec();
}

// What is wrong with a run on bundles' arguments, or null.
const char* bundlesUsageError(const QCommandLineParser& parser, const Options& o, bool headless,
                              ttrace::ui::AgentTarget& target) {
    const auto args = parser.positionalArguments();
    if (!args.isEmpty() && args.size() != 2) {
        return "ttrace-explorer: give both a REFERENCE and a CANDIDATE bundle\n";
    }
    if (headless && args.size() != 2) {
        return "ttrace-explorer: --screenshot/--markdown need REFERENCE and CANDIDATE (or "
               "--report)\n";
    }
    if (parser.isSet(o.agent) &&
        !ttrace::ui::AgentTarget::parseHostPort(parser.value(o.agent), target)) {
        return "ttrace-explorer: --agent wants HOST:PORT\n";
    }
    target.tokenFile = parser.value(o.tokenFile);
    if (parser.isSet(o.agent) && target.tokenFile.isEmpty()) {
        return "ttrace-explorer: --agent needs --token-file\n";
    }
    if (parser.isSet(o.localize) && args.size() != 2) {
        return "ttrace-explorer: --localize needs REFERENCE and CANDIDATE\n";
    }
    return nullptr;
}

// REFERENCE CANDIDATE (or nothing: an empty window), with an agent to localize on.
int openBundles(const QCommandLineParser& parser, const Options& o, bool headless) {
    ttrace::ui::AgentTarget target;
    if (const char* error = bundlesUsageError(parser, o, headless, target)) {
        return usage(error);
    }
    ttrace::ui::MainWindow window;
    if (headless) {
        exportHeadless(window, parser, o);
    }
    window.show();
    const auto args = parser.positionalArguments();
    if (args.size() == 2) {
        window.setStartupLocalize(parser.value(o.localize));
        window.openBundles(args[0], args[1]);
        if (!parser.isSet(o.agent) && parser.isSet(o.localize)) {
            target = ttrace::ui::rememberedAgent(args[1]); // the agent last used with it
        }
    }
    if (target.isComplete()) {
        window.localizeUi()->connectTo(target);
    }
    return QApplication::exec();
}

void setUpApplication() {
    QApplication::setApplicationName(QStringLiteral("TTrace Explorer"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/ttrace/ttrace-explorer.png")));
    QApplication::setOrganizationName(QStringLiteral("ttrace"));
    QApplication::setApplicationVersion(QStringLiteral(TTRACE_VERSION));
    // Lets a desktop match the window to the installed .desktop entry and its icon.
    QGuiApplication::setDesktopFileName(QStringLiteral(TTRACE_APP_ID));
    // One look everywhere, so screenshots from any desktop or CI match.
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
}

} // namespace

int main(int argc, char** argv) {
    const bool headless = wantsHeadless(argc, argv);
    if ((headless || onlyPrints(argc, argv)) && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    setUpApplication();
    const Options options;
    QCommandLineParser parser;
    addOptions(parser, options);
    parser.process(app);
    if (parser.isSet(options.report) || parser.isSet(options.reportCache)) {
        return openReportOnly(parser, options, headless);
    }
    return openBundles(parser, options, headless);
}
