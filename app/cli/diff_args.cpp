#include "diff_args.h"

#include <charconv>
#include <cmath>
#include <optional>

namespace ttrace::cli {
namespace {

// Everything after the usage line, shared by `ttrace diff` and `ttrace-mpi diff`.
constexpr const char* kOptions =
    "  Compares a candidate bundle with its reference under derived round-off tolerances.\n"
    "  Exit status: 0 clean; 1 divergent (every tensor valid); 2 invalid: a tensor invalid or\n"
    "  missing, a broken bundle or a bad option, even when other tensors diverge; 3 unresolved:\n"
    "  nothing else wrong, but an inferred placement the evidence did not settle.\n"
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
    "  --reference-is-candidate use a bundle captured as a candidate as the reference (the\n"
    "                           same layout across versions, a trusted layout against a new\n"
    "                           one): it has no perturbed variants, so verdicts rest on the\n"
    "                           analytic bound, and the report says so\n"
    "  --quiet                  print only the verdict: clean, divergent or invalid (and no\n"
    "                           progress line; progress is shown only on a terminal)\n";

template <typename T> bool parseNumber(std::string_view text, T& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

bool takesValue(std::string_view arg) {
    return arg == "--json" || arg == "--markdown" || arg == "--tolerance" || arg == "--safety" ||
           arg == "--override" || arg == "--iteration" || arg == "--micro-batch" || arg == "--top";
}

std::string applyNumber(std::string_view arg, std::string_view v, DiffArgs& a) {
    if (arg == "--tolerance" || arg == "--safety") {
        double x = 0.0;
        if (!parseNumber(v, x) || !std::isfinite(x) || x < 0.0) {
            return std::string(arg) + " needs a non-negative number, got '" + std::string(v) + "'";
        }
        if (arg == "--tolerance") {
            a.options.tolerance.global = x; // optional: not the type of the safety factor
        } else {
            a.options.tolerance.safetyFactor = x;
        }
        return {};
    }
    std::int64_t n = 0;
    if (!parseNumber(v, n) || (arg != "--micro-batch" && n < 0)) {
        return std::string(arg) + " needs an integer, got '" + std::string(v) + "'";
    }
    if (arg == "--iteration") {
        a.options.iteration = n;
    } else if (arg == "--micro-batch") {
        a.options.microBatch = n;
    } else {
        a.top = static_cast<std::size_t>(n);
    }
    return {};
}

// Applies an option that takes a value; the error, or "" when it was applied.
std::string applyValue(std::string_view arg, std::string_view v, DiffArgs& a) {
    if (arg == "--json" || arg == "--markdown") {
        (arg == "--json" ? a.json : a.markdown) = std::string(v);
        return {};
    }
    if (arg == "--override") {
        std::string error;
        auto o = parseToleranceOverride(v, error);
        if (!o) {
            return "--override: " + error;
        }
        a.options.tolerance.overrides.push_back(*o);
        return {};
    }
    return applyNumber(arg, v, a);
}

// Applies a flag; false when `arg` is none.
bool applyFlag(std::string_view arg, DiffArgs& a) {
    if (arg == "--no-cache") {
        a.options.useCache = false;
    } else if (arg == "--partial") {
        a.options.partial = true;
    } else if (arg == "--reference-is-candidate") {
        a.options.referenceIsCandidate = true;
    } else if (arg == "--quiet" || arg == "-q") {
        a.quiet = true;
    } else {
        return false;
    }
    return true;
}

} // namespace

std::string parseDiffArgs(std::span<const std::string_view> args, DiffArgs& a) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto arg = args[i];
        if (takesValue(arg)) {
            if (i + 1 >= args.size()) {
                return "option " + std::string(arg) + " needs a value";
            }
            if (auto error = applyValue(arg, args[++i], a); !error.empty()) {
                return error;
            }
        } else if (applyFlag(arg, a)) {
            continue;
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

std::string diffUsage(std::string_view command) {
    return "usage: " + std::string(command) + " [options] REFERENCE CANDIDATE\n" + kOptions;
}

bool wantsHelp(std::span<const std::string_view> args) {
    for (const auto arg : args) {
        if (arg == "--help" || arg == "-h") {
            return true;
        }
    }
    return false;
}

} // namespace ttrace::cli
