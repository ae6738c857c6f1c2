#include "commands.h"
#include "diff_args.h"
#include "terminal_progress.h"

#include "ttrace/session/diff_session.h"

#include <iostream>

namespace ttrace::cli {
namespace {

// The diff session drawn on the terminal: a printer shows no provisional result, only the
// final one, and Ctrl-C (not the progress line) ends the process.
class TerminalListener final : public DiffSessionListener {
public:
    explicit TerminalListener(TerminalProgress& terminal)
        : progress_(terminal.progressFn())
        , tensor_(terminal.tensorFn()) {}
    bool progress(double fraction, std::string_view what) override {
        return !progress_ || progress_(fraction, what);
    }
    void tensorCompared(const TensorResult& result) override {
        if (tensor_) {
            tensor_(result);
        }
    }

private:
    ProgressFn progress_;
    TensorResultFn tensor_;
};

} // namespace

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
    TerminalListener listener(terminal);
    const auto result = runDiffSession(a.bundles[0], a.bundles[1], a.options, listener);
    terminal.finish();
    return reportDiff(*result, a, "ttrace diff");
}

} // namespace ttrace::cli
