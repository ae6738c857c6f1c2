#include "commands.h"
#include "localize_args.h"
#include "localize_table.h"

#include "ttrace/compare/diff_engine.h"
#include "ttrace/io/bundle.h"
#include "ttrace/replay/bundle_match.h"
#include "ttrace/replay/localize_report.h"
#include "ttrace/replay/localize_session.h"
#include "ttrace/replay/token_file.h"

#include <fstream>
#include <iostream>

namespace ttrace::cli {
namespace {

using namespace ttrace::replay;

bool writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    return out && (out << text) && out.flush();
}

int fail(const std::string& message) {
    std::cerr << "ttrace localize: " << message << "\n";
    return kExitBadInput;
}

// Named modules: one suspect each, at the requested (or first captured) iteration.
std::vector<Suspect> namedSuspects(const LocalizeArgs& a, const AgentInfo& agent) {
    std::vector<Suspect> out;
    const std::int64_t iteration =
        a.iteration.value_or(agent.iterations.empty() ? 0 : agent.iterations.front());
    for (const auto& m : a.modules) {
        const bool perIteration =
            a.phase == LocalizePhase::Step || a.phase == LocalizePhase::Reduction;
        out.push_back({m, iteration, perIteration ? -1 : a.microBatch, a.phase, 0.0});
    }
    return out;
}

// The comparison the walk starts from (and a reduction suspect is judged against); its
// diagnostics are printed here, where the table's rows follow.
std::shared_ptr<const DiffResult> diffToLocalize(const LocalizeArgs& a, LocalizeTable& table) {
    DiffOptions options;
    options.tolerance = a.tolerance;
    options.iteration = a.iteration;
    options.useCache = a.useCache;
    auto diff =
        std::make_shared<const DiffResult>(diffBundleDirs(a.bundles[0], a.bundles[1], options));
    if (!a.modules.empty()) {
        return diff;
    }
    for (const auto& d : diff->diagnostics) {
        std::cerr << d.toString() << "\n";
    }
    if (!hasErrors(diff->diagnostics)) {
        table.diffLine(*diff);
    }
    return diff;
}

LocalizeResult runLocalizeRequest(const LocalizeArgs& a, AgentClient& client,
                                  const AgentInfo& agent, LocalizeTable& table) {
    LocalizeRequest request;
    request.referenceBundle = a.bundles[0];
    request.tolerance = a.tolerance;
    request.suspects = namedSuspects(a, agent);
    // A suspect of the gradient reduction is judged against the diff (did its param grads
    // agree?), as the walk and the explorer judge it; other named suspects need none.
    if (a.modules.empty() || a.phase == LocalizePhase::Reduction) {
        request.diff = diffToLocalize(a, table);
    }
    LocalizeCallbacks callbacks;
    callbacks.verdict = [&table](const ModuleVerdict& v) { table.row(v); };
    return localize(client, agent, request, {}, callbacks);
}

// Why the agent must not judge this pair (it serves another capture), or empty.
std::string servesOtherBundles(const LocalizeArgs& a, const AgentInfo& agent) {
    Diagnostics problems;
    const auto reference = readManifest(a.bundles[0], problems);
    const auto candidate = readManifest(a.bundles[1], problems);
    if (!reference || !candidate) {
        return problems.empty() ? "cannot read the bundles' manifests"
                                : problems.front().toString();
    }
    const auto mismatch = agentBundleMismatch(agent, *reference, *candidate);
    return mismatch ? mismatch->message : std::string();
}

} // namespace

int runLocalize(std::span<const std::string_view> args) {
    for (const auto arg : args) {
        if (arg == "--help" || arg == "-h") {
            std::cout << kLocalizeUsage;
            return kExitOk;
        }
    }
    LocalizeArgs a;
    if (const auto error = parseLocalizeArgs(args, a); !error.empty()) {
        std::cerr << "ttrace localize: " << error << "\n" << kLocalizeUsage;
        return kExitBadInput;
    }
    const auto token = readTokenFile(a.tokenFile);
    const auto endpoint = endpointFromHostPort(a.agent);
    if (!token || !endpoint) {
        return fail((token ? endpoint.error() : token.error()).message);
    }
    ClientOptions options;
    options.endpoint = endpoint.value();
    options.token = token.value();
    options.requestTimeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(a.timeoutSeconds * 1000.0));
    AgentClient client(options);
    const auto agent = client.hello().get();
    if (!agent) {
        return fail("handshake with the agent at " + a.agent +
                    " failed: " + agent.error().toString());
    }
    if (const auto why = servesOtherBundles(a, agent.value()); !why.empty()) {
        return fail(why);
    }
    LocalizeTable table(std::cout);
    table.agentLine(agent.value(), a.agent);
    const auto result = runLocalizeRequest(a, client, agent.value(), table);
    table.conclusion(result);
    const LocalizeContext context{a.bundles[0], a.bundles[1], options.endpoint, agent->agent,
                                  agent->worldSize};
    if (!a.json.empty() && !writeFile(a.json, localizeResultToJson(result, context))) {
        return fail("cannot write " + a.json);
    }
    if (!a.markdown.empty() && !writeFile(a.markdown, localizeResultToMarkdown(result, context))) {
        return fail("cannot write " + a.markdown);
    }
    if (a.shutdown) {
        if (const auto done = client.shutdownAgent().get(); !done) {
            std::cerr << "ttrace localize: shutting the agent down failed: "
                      << done.error().toString() << "\n";
        }
    }
    // A divergence that could not be replayed is no answer: never "nothing introduced". Nor is
    // a replay this agent's layout cannot host (a relaunch smaller than the job).
    if (!result.problems.empty() || result.cancelled || result.undetermined() ||
        (!result.introduced() && result.layoutRefused())) {
        return kExitBadInput;
    }
    return result.introduced() || result.enteredUnreplayed() ? kExitDivergent : kExitOk;
}

} // namespace ttrace::cli
