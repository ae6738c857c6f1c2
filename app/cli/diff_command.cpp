#include "commands.h"
#include "diff_summary.h"
#include "terminal_progress.h"

#include "ttrace/diff_engine.h"
#include "ttrace/report_json.h"
#include "ttrace/report_markdown.h"
#include "ttrace/verdict.h"
#include "ttrace/verdict_text.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace ttrace::cli {
namespace {

constexpr const char* kUsage =
    "usage: ttrace diff [options] REFERENCE CANDIDATE\n"
    "  Compares a candidate bundle with its reference under derived round-off tolerances.\n"
    "  Exit status: 0 clean; 1 divergent (every tensor valid); 2 invalid: a tensor invalid or\n"
    "  missing, a broken bundle or a bad option, even when other tensors diverge.\n"
    "options:\n"
    "  --json FILE              write the full result (docs/diff-json.md)\n"
    "  --markdown FILE          write a Markdown report for a bug report\n"
    "  --tolerance X            use relative tolerance X for every floating tensor\n"
    "  --override 'PAT[:KIND]=X' tolerance X for modules matching glob PAT (and KIND);\n"
    "                           repeatable, later ones win, beats --tolerance\n"
    "  --safety X               empirical safety factor (default 4)\n"
    "  --iteration N            compare only iteration N\n"
    "  --micro-batch N          compare only micro-batch N (-1: per-iteration tensors)\n"
    "  --top N                  rows of the worst-tensors table (default 10)\n"
    "  --no-cache               neither read nor write the summary cache\n"
    "  --partial                compare an unfinished capture (a killed job: no manifest,\n"
    "                           status records) on the steps every rank finished\n"
    "  --quiet                  print only the verdict: clean, divergent or invalid (and no\n"
    "                           progress line; progress is shown only on a terminal)\n";

template <typename T> bool parseNumber(std::string_view text, T& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

bool writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    return out && (out << text) && out.flush();
}

struct DiffArgs {
    std::vector<std::string> bundles;
    std::string json, markdown;
    DiffOptions options;
    std::size_t top = 10;
    bool quiet = false;
};

// Returns an error message, or empty on success.
std::string parseArgs(std::span<const std::string_view> args, DiffArgs& a) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto arg = args[i];
        auto value = [&]() -> std::optional<std::string_view> {
            if (i + 1 >= args.size()) {
                return std::nullopt;
            }
            return args[++i];
        };
        auto need = [&](std::optional<std::string_view> v) {
            return v ? std::string() : "option " + std::string(arg) + " needs a value";
        };
        if (arg == "--json" || arg == "--markdown") {
            const auto v = value();
            if (!v) {
                return need(v);
            }
            (arg == "--json" ? a.json : a.markdown) = std::string(*v);
        } else if (arg == "--tolerance" || arg == "--safety") {
            const auto v = value();
            double x = 0.0;
            if (!v) {
                return need(v);
            }
            if (!parseNumber(*v, x) || !std::isfinite(x) || x < 0.0) {
                return std::string(arg) + " needs a non-negative number, got '" + std::string(*v) +
                       "'";
            }
            if (arg == "--tolerance") {
                a.options.tolerance.global = x;
            } else {
                a.options.tolerance.safetyFactor = x;
            }
        } else if (arg == "--override") {
            const auto v = value();
            if (!v) {
                return need(v);
            }
            std::string error;
            auto o = parseToleranceOverride(*v, error);
            if (!o) {
                return "--override: " + error;
            }
            a.options.tolerance.overrides.push_back(*o);
        } else if (arg == "--iteration" || arg == "--micro-batch" || arg == "--top") {
            const auto v = value();
            std::int64_t n = 0;
            if (!v) {
                return need(v);
            }
            if (!parseNumber(*v, n) || (arg != "--micro-batch" && n < 0)) {
                return std::string(arg) + " needs an integer, got '" + std::string(*v) + "'";
            }
            if (arg == "--iteration") {
                a.options.iteration = n;
            } else if (arg == "--micro-batch") {
                a.options.microBatch = n;
            } else {
                a.top = static_cast<std::size_t>(n);
            }
        } else if (arg == "--no-cache") {
            a.options.useCache = false;
        } else if (arg == "--partial") {
            a.options.partial = true;
        } else if (arg == "--quiet" || arg == "-q") {
            a.quiet = true;
        } else if (arg.starts_with("-") && arg.size() > 1) {
            return "unknown option '" + std::string(arg) + "'";
        } else {
            a.bundles.emplace_back(arg);
        }
    }
    if (a.bundles.size() != 2) {
        return "expected REFERENCE and CANDIDATE bundle directories";
    }
    return {};
}

} // namespace

int runDiff(std::span<const std::string_view> args) {
    for (const auto arg : args) {
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            return kExitOk;
        }
    }
    DiffArgs a;
    if (const auto error = parseArgs(args, a); !error.empty()) {
        std::cerr << "ttrace diff: " << error << "\n" << kUsage;
        return kExitBadInput;
    }
    TerminalProgress terminal(std::cerr, !a.quiet && stderrIsTerminal());
    const auto result = diffBundleDirs(a.bundles[0], a.bundles[1], a.options, terminal.progressFn(),
                                       terminal.tensorFn());
    terminal.finish();
    for (const auto& d : result.diagnostics) {
        std::cerr << d.toString() << "\n";
    }
    if (!a.json.empty() && !writeFile(a.json, diffResultToJson(result))) {
        std::cerr << "ttrace diff: cannot write " << a.json << "\n";
        return kExitBadInput;
    }
    if (!a.markdown.empty() && !writeFile(a.markdown, diffResultToMarkdown(result))) {
        std::cerr << "ttrace diff: cannot write " << a.markdown << "\n";
        return kExitBadInput;
    }
    const bool unusable = result.tensors.empty() && hasErrors(result.diagnostics);
    if (unusable) {
        std::cerr << "ttrace diff: the bundles could not be compared\n";
        if (!a.quiet) {
            std::cout << verdictLine(result) << "\n";
        }
        return exitCodeFor(result);
    }
    if (a.quiet) {
        std::cout << runVerdictName(runVerdict(result)) << "\n";
    } else {
        printDiffSummary(std::cout, result, a.top);
    }
    if (hasErrors(result.diagnostics)) {
        // A bundle with a missing or broken rank file: verdicts are unreliable (a missing
        // partial sum looks like a divergence), so this is bad input, not a bug finding.
        std::cerr << "ttrace diff: the bundles have errors (above); verdicts are unreliable\n";
    }
    return exitCodeFor(result);
}

} // namespace ttrace::cli
