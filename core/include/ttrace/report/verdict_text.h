#pragma once
// The run's verdict in words, for every front end: `ttrace diff` prints these lines and the
// explorer shows them (verdict pill, headline), so the two never tell different stories about
// the same pair, least of all about a pair that was refused or could only partly be compared.
#include "ttrace/compare/diff_result.h"
#include "ttrace/compare/drift.h"

#include <cstddef>
#include <optional>
#include <string>

namespace ttrace {

// Pairs the engine refuses to compare (docs/bundle-format.md): comparing them would give a
// confident answer about the wrong question. A reference of another model ("different-model")
// is refused only when no tensor is in common (the engine then compares nothing, which front
// ends show as a refusal too); one parameter of another shape is compared, and the tensors
// that differ come out invalid, each with its reason.
enum class PairProblem {
    SameBundle,   // one bundle given as both sides
    SwappedRoles, // the candidate given first: swapping the two fixes it
    RoleMismatch, // a candidate given as the reference
};

struct PairRefusal {
    PairProblem problem = PairProblem::SameBundle;
    Diagnostic diagnostic; // as the pair check reported it (location: the offending bundle)
};

// The first pair-level error among `diagnostics`, if any.
std::optional<PairRefusal> pairRefusal(const Diagnostics& diagnostics);

// "N tensors' inferred placement is unresolved (...)": the one wording of the count.
std::string unresolvedText(std::size_t count);

// The summary's last line: "CLEAN: ...", "DIVERGENT: ...", "UNRESOLVED: ..." or
// "INVALID: ..." with why.
std::string verdictLine(const DiffResult& result);

// Why a comparison that found something cannot be trusted as it stands, naming the file: the
// first bundle error and the first tensor that could not be compared before the first
// divergence, e.g. "Verdict incomplete: candidate rank 2 (b/rank-00002.h5): rank-00002.h5 is
// truncated ...; iter 0 mb 0 fc1 forward_output[0] is invalid, earlier than the first
// divergence: hole: ...". Empty when the verdict is complete, refused or nothing was compared.
std::string incompleteVerdictText(const DiffResult& result);

// Which verdicts rest on an analytic bound that is only provisional (the reference has no
// perturbed variants; docs/tolerance.md, "Where the analytic bound is provisional"), e.g.
// "Provisional (analytic bound only): 412 tensors of the optimizer step and later steps are
// judged neither clean nor divergent; 3 exceed the bound (max ratio 2.1). Capture the reference
// with perturbed variants to judge them." Empty when no tensor is provisional.
std::string provisionalVerdictText(const DiffResult& result);

// Which floors rest on perturbed variants that disagree by more than kUnstableFloorFactor
// (docs/tolerance.md, "Variants that disagree"), e.g. "3 tensors' floors rest on variants that
// disagree by more than 100x: capture more variants (--perturbations N); 1 of them exceeds its
// tolerance by less than its variants disagree (max ratio 2.26) and is judged provisionally,
// not divergent." Empty when no floor is unstable.
std::string unstableFloorText(const DiffResult& result);

// A tensor's verdict in one word for tables: "provisional" when its bound is provisional
// (whatever its ratio), else its status's name.
std::string_view tensorVerdictName(const TensorResult& tensor);

// What qualifies the verdict, for a front end's one caveat line: the incomplete verdict's
// text, then the provisional one, joined.
std::string verdictCaveat(const DiffResult& result);

} // namespace ttrace
