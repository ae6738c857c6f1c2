#include "localize_args.h"

#include <charconv>
#include <cmath>

namespace ttrace::cli {

const char* const kLocalizeUsage =
    "usage: ttrace localize [options] REFERENCE CANDIDATE --agent HOST:PORT --token-file FILE\n"
    "  Replays the divergent modules of CANDIDATE in its own job (the agent, docs/protocol.md)\n"
    "  with the reference's inputs: a module that still diverges holds the bug.\n"
    "  Exit status: 0 nothing introduced, 1 a module (or phase) introduces a divergence or\n"
    "  the run diverges where no module runs, 2 bad input, the agent failed, or it refused a\n"
    "  replay its layout cannot host (layout_too_small: a relaunch smaller than the job).\n"
    "options:\n"
    "  --agent HOST:PORT        the agent's address (it prints it; TTRACE_AGENT_ENDPOINT_FILE)\n"
    "  --token-file FILE        the agent's token file\n"
    "  --module NAME            judge this module only (repeatable); no diff is run\n"
    "  --phase P                forward, backward, reduction or step for --module (default\n"
    "                           forward; reduction: a step replay judged against the diff)\n"
    "  --iteration N            localize in iteration N (with --module: replay iteration N)\n"
    "  --micro-batch N          micro-batch for --module (default 0)\n"
    "  --json FILE              write the result (docs/localize-json.md)\n"
    "  --markdown FILE          write a Markdown report\n"
    "  --safety X               empirical safety factor (default 4)\n"
    "  --timeout S              seconds to wait for one replay (default 300)\n"
    "  --no-cache               neither read nor write the diff's summary cache\n"
    "  --shutdown               ask the agent to exit when done\n";

namespace {

template <typename T> bool parseNumber(std::string_view text, T& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

std::string applyValue(std::string_view arg, std::string_view v, LocalizeArgs& a) {
    if (arg == "--agent") {
        a.agent = v;
    } else if (arg == "--token-file") {
        a.tokenFile = v;
    } else if (arg == "--module") {
        a.modules.emplace_back(v);
    } else if (arg == "--json") {
        a.json = v;
    } else if (arg == "--markdown") {
        a.markdown = v;
    } else if (arg == "--phase") {
        if (v == "forward" || v == "backward" || v == "reduction" || v == "step") {
            a.phase = v == "forward"     ? replay::LocalizePhase::Forward
                      : v == "backward"  ? replay::LocalizePhase::Backward
                      : v == "reduction" ? replay::LocalizePhase::Reduction
                                         : replay::LocalizePhase::Step;
        } else {
            return "--phase must be forward, backward, reduction or step, got '" + std::string(v) +
                   "'";
        }
    } else if (arg == "--iteration" || arg == "--micro-batch") {
        std::int64_t n = 0;
        if (!parseNumber(v, n) || n < 0) {
            return std::string(arg) + " needs a non-negative integer, got '" + std::string(v) + "'";
        }
        if (arg == "--iteration") {
            a.iteration = n;
        } else {
            a.microBatch = n;
        }
    } else if (arg == "--safety" || arg == "--timeout") {
        double x = 0.0;
        if (!parseNumber(v, x) || !std::isfinite(x) || x <= 0.0) {
            return std::string(arg) + " needs a positive number, got '" + std::string(v) + "'";
        }
        (arg == "--safety" ? a.tolerance.safetyFactor : a.timeoutSeconds) = x;
    } else {
        return "unknown option '" + std::string(arg) + "'";
    }
    return {};
}

} // namespace

std::string parseLocalizeArgs(std::span<const std::string_view> args, LocalizeArgs& a) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto arg = args[i];
        if (arg == "--no-cache") {
            a.useCache = false;
        } else if (arg == "--shutdown") {
            a.shutdown = true;
        } else if (arg.starts_with("-") && arg.size() > 1) {
            if (i + 1 >= args.size()) {
                return "option " + std::string(arg) + " needs a value";
            }
            if (auto error = applyValue(arg, args[++i], a); !error.empty()) {
                return error;
            }
        } else {
            a.bundles.emplace_back(arg);
        }
    }
    if (a.bundles.size() != 2) {
        return "expected REFERENCE and CANDIDATE bundle directories";
    }
    if (a.agent.empty() || a.tokenFile.empty()) {
        return "--agent HOST:PORT and --token-file FILE are required";
    }
    return {};
}

} // namespace ttrace::cli
