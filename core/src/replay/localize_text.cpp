#include "ttrace/replay/localize_text.h"

#include "ttrace/replay/localize_report.h"
#include "ttrace/replay/localize_walk.h"

#include <algorithm>

namespace ttrace::replay {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

} // namespace

std::string_view moduleFindingText(ModuleFinding finding) {
    switch (finding) {
    case ModuleFinding::None: return "";
    case ModuleFinding::IntroducedHere: return "introduced here";
    case ModuleFinding::IntroducedBelow: return "introduced below";
    case ModuleFinding::Inherited: return "inherited";
    case ModuleFinding::NotReplayable: return "not replayable";
    case ModuleFinding::ReductionGuilty: return "introduced in gradient reduction";
    case ModuleFinding::StepGuilty: return "introduced in optimizer step";
    }
    return "";
}

std::string_view refusalText(Refusal refusal) {
    switch (refusal) {
    case Refusal::None: return "";
    case Refusal::Stochastic:
        return "the module draws random numbers: its replay would not see the reference's "
               "random stream";
    case Refusal::RecomputeStochastic:
        return "a recompute of a module that draws random numbers: whether the recompute "
               "restored the random state cannot be replayed (the diff's verdict stands)";
    case Refusal::RecomputeGradients:
        return "a recompute has no gradients of its own: they are filed under the call it "
               "recomputes";
    case Refusal::CallNotRecorded:
        return "that call of the module was not recorded in this micro-batch";
    case Refusal::HandoffUnrecorded:
        return "a side of the pipeline hand-off (sent or received) was not captured";
    case Refusal::PartialIntegerInput:
        return "an integer input (such as tokens per expert over expert data parallelism) is "
               "held as partial sums across ranks: no rank's share of the reference's value is "
               "known";
    case Refusal::Unknown: return "refused for a reason this client does not know";
    }
    return "";
}

std::string refusalReason(const Error& error) {
    const auto words = refusalText(error.refusal);
    const std::string code(errorCodeName(error.code));
    if (words.empty()) {
        return code + ": " + error.message;
    }
    return code + ": " + std::string(words) + " (" + error.message + ")";
}

ModuleFinding findingOf(const ModuleVerdict& v) {
    const bool optimizer =
        v.suspect.phase == LocalizePhase::Step || v.suspect.phase == LocalizePhase::Reduction;
    switch (v.verdict) {
    case Verdict::NotReplayable: return ModuleFinding::NotReplayable;
    case Verdict::Introduced:
        // A step replay fed the reference's main grads still diverges: the step is wrong.
        return optimizer ? ModuleFinding::StepGuilty : ModuleFinding::IntroducedHere;
    case Verdict::Inherited: return ModuleFinding::Inherited;
    }
    return ModuleFinding::None;
}

ModuleFinding findingIn(const LocalizeResult& r, const std::string& module) {
    if (r.guiltyPhase && contains(r.guiltyParameters, module)) {
        return *r.guiltyPhase == LocalizePhase::Reduction ? ModuleFinding::ReductionGuilty
                                                          : ModuleFinding::StepGuilty;
    }
    const auto it =
        std::find_if(r.verdicts.rbegin(), r.verdicts.rend(),
                     [&](const ModuleVerdict& v) { return v.suspect.module == module; });
    if (it == r.verdicts.rend()) {
        return ModuleFinding::None;
    }
    const ModuleFinding own = findingOf(*it);
    if (own == ModuleFinding::IntroducedHere &&
        std::any_of(r.guilty.begin(), r.guilty.end(),
                    [&](const std::string& g) { return isBelow(g, module); })) {
        return ModuleFinding::IntroducedBelow;
    }
    return own;
}

std::string localizeVerdictLine(const LocalizeResult& r) {
    const char* prefix = !r.problems.empty()     ? "STOPPED: "
                         : r.cancelled           ? "CANCELLED: "
                         : r.introduced()        ? "INTRODUCED: "
                         : r.undetermined()      ? "UNDETERMINED: "
                         : r.enteredUnreplayed() ? "DIVERGENT: "
                                                 : "";
    return prefix + localizeConclusion(r);
}

} // namespace ttrace::replay
