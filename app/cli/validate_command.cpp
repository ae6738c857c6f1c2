#include "commands.h"

#include "ttrace/validator.h"

#include <iostream>
#include <string>
#include <vector>

namespace ttrace::cli {

int runValidate(std::span<const std::string_view> args) {
    std::vector<std::string> bundles;
    ValidateOptions options;
    for (const auto arg : args) {
        if (arg == "--help" || arg == "-h") {
            std::cout << "usage: ttrace validate [--no-coverage] BUNDLE...\n"
                         "  Checks the manifest, every rank file and, unless --no-coverage,\n"
                         "  merges every tensor to find holes, overlaps and disagreeing replicas.\n";
            return kExitOk;
        }
        if (arg == "--no-coverage") {
            options.checkCoverage = false;
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
        const auto report = validateBundle(dir, options);
        if (!report.summary.role.empty()) {
            std::cout << formatSummary(dir, report.summary);
        }
        std::size_t errors = 0;
        for (const auto& d : report.diagnostics) {
            std::cerr << d.toString() << "\n";
            errors += d.severity == Severity::Error ? 1 : 0;
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
