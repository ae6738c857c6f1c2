#include "commands.h"
#include "terminal_progress.h"

#include "ttrace/merge/validator.h"

#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace ttrace::cli {

int runValidate(std::span<const std::string_view> args) {
    std::vector<std::string> bundles;
    ValidateOptions options;
    // One missing rank makes every tensor it held a hole; a few examples of each kind of
    // problem say more than hundreds of lines. --all prints everything.
    std::size_t perCodeLimit = 5;
    bool quiet = false;
    for (const auto arg : args) {
        if (arg == "--help" || arg == "-h") {
            std::cout << "usage: ttrace validate [--no-coverage] [--all] [--quiet] BUNDLE...\n"
                         "  Checks the manifest, every rank file and, unless --no-coverage,\n"
                         "  merges every tensor to find holes, overlaps and disagreeing replicas.\n"
                         "  --all prints every problem (default: 5 of each kind).\n"
                         "  --quiet shows no progress (shown only when stderr is a terminal).\n";
            return kExitOk;
        }
        if (arg == "--no-coverage") {
            options.checkCoverage = false;
        } else if (arg == "--quiet" || arg == "-q") {
            quiet = true;
        } else if (arg == "--all") {
            perCodeLimit = static_cast<std::size_t>(-1);
        } else if (arg.starts_with("-")) {
            std::cerr << "ttrace validate: unknown option '" << arg << "'\n";
            return kExitBadInput;
        } else {
            bundles.emplace_back(arg);
        }
    }
    if (bundles.empty()) {
        std::cerr << "usage: ttrace validate [--no-coverage] BUNDLE...\n";
        return kExitBadInput;
    }
    int exitCode = kExitOk;
    for (const auto& dir : bundles) {
        ValidationReport report;
        {
            // Cleared (destroyed) before anything is printed about this bundle.
            TerminalProgress terminal(std::cerr, !quiet && stderrIsTerminal());
            report = validateBundle(dir, options, terminal.progressFn(), terminal.checkedFn());
        }
        if (!report.summary.role.empty()) {
            std::cout << formatSummary(dir, report.summary);
        }
        std::size_t errors = 0;
        std::size_t disagreements = 0;
        std::map<std::string, std::size_t> perCode;
        for (const auto& d : report.diagnostics) {
            errors += d.severity == Severity::Error ? 1 : 0;
            disagreements += d.code == DiagnosticCode::ReplicaDisagree ? 1 : 0;
            if (++perCode[std::string(d.code.name())] <=
                perCodeLimit) { // by name: printed in name order
                std::cerr << d.toString() << "\n";
            }
        }
        for (const auto& [code, count] : perCode) {
            if (count > perCodeLimit) {
                std::cerr << "... and " << count - perCodeLimit << " more '" << code
                          << "' problems (--all prints them)\n";
            }
        }
        if (disagreements > 0) {
            std::cerr << dir << ": " << disagreements
                      << " tensors have replicas that disagree across ranks. The bundle is "
                         "valid, but the run is suspect: compare it with 'ttrace diff'.\n";
        }
        if (errors > 0) {
            std::cerr << dir << ": INVALID (" << errors << " error" << (errors == 1 ? "" : "s")
                      << ")\n";
            exitCode = kExitBadInput;
        } else {
            std::cout << "valid\n\n";
        }
    }
    return exitCode;
}

} // namespace ttrace::cli
