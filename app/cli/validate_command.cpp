#include "commands.h"
#include "terminal_progress.h"

#include "ttrace/merge/validator.h"

#include <iostream>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace ttrace::cli {

namespace {

constexpr const char* kValidateHelp =
    "usage: ttrace validate [--no-coverage] [--all] [--quiet] BUNDLE...\n"
    "  Checks the manifest, every rank file and, unless --no-coverage,\n"
    "  merges every tensor to find holes, overlaps and disagreeing replicas.\n"
    "  --all prints every problem (default: 5 of each kind).\n"
    "  --quiet shows no progress (shown only when stderr is a terminal).\n";

struct ValidateArgs {
    std::vector<std::string> bundles;
    ValidateOptions options;
    // One missing rank makes every tensor it held a hole; a few examples of each kind of
    // problem say more than hundreds of lines. --all prints everything.
    std::size_t perCodeLimit = 5;
    bool quiet = false;
    bool help = false;
};

// The parsed arguments, or the error to print.
std::variant<ValidateArgs, std::string> parseValidateArgs(std::span<const std::string_view> args) {
    ValidateArgs a;
    for (const auto arg : args) {
        if (arg == "--help" || arg == "-h") {
            a.help = true;
            return a;
        }
        if (arg == "--no-coverage") {
            a.options.checkCoverage = false;
        } else if (arg == "--quiet" || arg == "-q") {
            a.quiet = true;
        } else if (arg == "--all") {
            a.perCodeLimit = static_cast<std::size_t>(-1);
        } else if (arg.starts_with("-")) {
            return "ttrace validate: unknown option '" + std::string(arg) + "'";
        } else {
            a.bundles.emplace_back(arg);
        }
    }
    if (a.bundles.empty()) {
        return std::string("usage: ttrace validate [--no-coverage] BUNDLE...");
    }
    return a;
}

// Prints one bundle's problems (at most `perCodeLimit` of each code); its exit code.
int printReport(const std::string& dir, const ValidationReport& report, std::size_t perCodeLimit) {
    if (!report.summary.role.empty()) {
        std::cout << formatSummary(dir, report.summary);
    }
    std::size_t errors = 0;
    std::size_t disagreements = 0;
    std::map<std::string, std::size_t> perCode; // by name: printed in name order
    for (const auto& d : report.diagnostics) {
        errors += d.severity == Severity::Error ? 1 : 0;
        disagreements += d.code == DiagnosticCode::ReplicaDisagree ? 1 : 0;
        if (++perCode[std::string(d.code.name())] <= perCodeLimit) {
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
        return kExitBadInput;
    }
    std::cout << "valid\n\n";
    return kExitOk;
}

} // namespace

int runValidate(std::span<const std::string_view> args) {
    auto parsed = parseValidateArgs(args);
    if (const auto* error = std::get_if<std::string>(&parsed)) {
        std::cerr << *error << "\n";
        return kExitBadInput;
    }
    const auto& a = std::get<ValidateArgs>(parsed);
    if (a.help) {
        std::cout << kValidateHelp;
        return kExitOk;
    }
    int exitCode = kExitOk;
    for (const auto& dir : a.bundles) {
        ValidationReport report;
        {
            // Cleared (destroyed) before anything is printed about this bundle.
            TerminalProgress terminal(std::cerr, !a.quiet && stderrIsTerminal());
            report = validateBundle(dir, a.options, terminal.progressFn(), terminal.checkedFn());
        }
        if (printReport(dir, report, a.perCodeLimit) != kExitOk) {
            exitCode = kExitBadInput;
        }
    }
    return exitCode;
}

} // namespace ttrace::cli
