// ttrace: the headless front end of the engine, for terminals and CI pipelines.
#include "commands.h"

#include <iostream>
#include <string_view>
#include <vector>

namespace {

void printUsage(std::ostream& out) {
    out << "usage: ttrace <command> [options]\n"
           "\n"
           "commands:\n"
           "  validate BUNDLE...   check bundles and print a summary (exit 2 on errors)\n"
           "  diff REF CAND        compare a candidate bundle with its reference\n"
           "                       (exit 0 clean, 1 divergence, 2 bad input)\n"
           "  localize REF CAND    replay divergent modules in the candidate's job to find\n"
           "                       the one that introduces the bug (needs its agent)\n"
           "  serve --reference REF --candidate CAND [--yes] [-- LAUNCH...]\n"
           "                       relaunch the candidate's script from its bundles in replay\n"
           "                       mode and serve localize (runs $TTRACE_PYTHON -m ttrace)\n"
           "  capture --reference|--candidate --out DIR [--perturbations K] -- CMD...\n"
           "                       run an unchanged training script as a capture; a\n"
           "                       reference runs once per variant, joined into one bundle\n"
           "\n"
           "Run 'ttrace <command> --help' for a command's options, 'ttrace --version' for the\n"
           "version.\n";
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty() || args.front() == "--help" || args.front() == "-h") {
        printUsage(args.empty() ? std::cerr : std::cout);
        return args.empty() ? ttrace::cli::kExitBadInput : ttrace::cli::kExitOk;
    }
    if (args.front() == "--version") {
        std::cout << "ttrace " << TTRACE_VERSION << '\n';
        return ttrace::cli::kExitOk;
    }
    const auto command = args.front();
    const std::span<const std::string_view> rest(args.data() + 1, args.size() - 1);
    if (command == "validate") {
        return ttrace::cli::runValidate(rest);
    }
    if (command == "diff") {
        return ttrace::cli::runDiff(rest);
    }
    if (command == "localize") {
        return ttrace::cli::runLocalize(rest);
    }
    if (command == "serve") {
        return ttrace::cli::runServe(rest);
    }
    if (command == "capture") {
        return ttrace::cli::runCapture(rest);
    }
    std::cerr << "ttrace: unknown command '" << command << "'\n";
    printUsage(std::cerr);
    return ttrace::cli::kExitBadInput;
}
