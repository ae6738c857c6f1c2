// ttrace-explorer: the desktop front end. ttrace-explorer [REFERENCE CANDIDATE]
#include "ttrace/ui/main_window.h"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("TTrace Explorer"));
    QApplication::setOrganizationName(QStringLiteral("ttrace"));
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Explore where a distributed training run diverges from its reference."));
    parser.addHelpOption();
    parser.addPositionalArgument(QStringLiteral("reference"), QStringLiteral("reference bundle"));
    parser.addPositionalArgument(QStringLiteral("candidate"), QStringLiteral("candidate bundle"));
    parser.process(app);
    ttrace::ui::MainWindow window;
    const auto args = parser.positionalArguments();
    if (args.size() == 2) {
        window.openBundles(args[0], args[1]);
    }
    window.show();
    return QApplication::exec();
}
