#include "commands.h"
#include "diff_args.h"
#include "terminal_progress.h"

#include "ttrace/diff_engine.h"

#include <iostream>

namespace ttrace::cli {

int runDiff(std::span<const std::string_view> args) {
    if (wantsHelp(args)) {
        std::cout << diffUsage("ttrace diff");
        return kExitOk;
    }
    DiffArgs a;
    if (const auto error = parseDiffArgs(args, a); !error.empty()) {
        std::cerr << "ttrace diff: " << error << "\n" << diffUsage("ttrace diff");
        return kExitBadInput;
    }
    TerminalProgress terminal(std::cerr, !a.quiet && stderrIsTerminal());
    const auto result = diffBundleDirs(a.bundles[0], a.bundles[1], a.options, terminal.progressFn(),
                                       terminal.tensorFn());
    terminal.finish();
    return reportDiff(result, a, "ttrace diff");
}

} // namespace ttrace::cli
