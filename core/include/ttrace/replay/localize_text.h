#pragma once
// A localize result in words, for every front end: `ttrace localize` prints these lines and the
// explorer shows them (headline after Localize or Localize All, badges in the tree), so a
// replay that finds the gradient reduction or the optimizer step guilty reads the same
// everywhere, and never like an innocent module's "inherited".
#include "ttrace/replay/localize_result.h"
#include "ttrace/replay/replay_error.h"

#include <string>
#include <string_view>

namespace ttrace::replay {

// What one module is, once judged, as the tree badges it and the reports word it.
enum class ModuleFinding {
    None,            // not judged
    IntroducedHere,  // still diverges given the reference's inputs, and no child does
    IntroducedBelow, // diverges given the reference's inputs because a child does
    Inherited,       // agrees given the reference's inputs: the error came from upstream
    NotReplayable,   // the agent cannot replay it
    ReductionGuilty, // its gradients were reduced wrongly (the step is right given them)
    StepGuilty,      // the optimizer step updates its parameters wrongly
};

// Why a row cannot be replayed, in the words every front end shows for the agent's typed
// refusal ("" for Refusal::None: the agent's own message stands alone).
std::string_view refusalText(Refusal refusal);

// A refused replay's reason as `ttrace localize` prints it and the explorer's tooltip shows
// it: the typed reason's words, then the agent's message.
std::string refusalReason(const Error& error);

// "introduced here", "inherited", "introduced in gradient reduction", ...; "" for None.
std::string_view moduleFindingText(ModuleFinding finding);

// What one verdict says of its module on its own (children and the walk's phase rule aside):
// a step replay that still diverges makes the step guilty; one that agrees says nothing by
// itself (LocalizeResult::guiltyPhase decides whether the reduction before it was wrong).
ModuleFinding findingOf(const ModuleVerdict& verdict);

// The finding `result` gives `module`: the guilty phase for its parameters, else its own
// verdict's (IntroducedBelow when a deeper guilty module sits under it), None when unjudged.
ModuleFinding findingIn(const LocalizeResult& result, const std::string& module);

// The last line of `ttrace localize`: "INTRODUCED: introduced in gradient reduction: parameters
// of final_norm", "UNDETERMINED: not localized: ...", "STOPPED: not localized: the replays
// stopped at an error (...)", "CANCELLED: ...", "nothing introduced: ...".
std::string localizeVerdictLine(const LocalizeResult& result);

} // namespace ttrace::replay
