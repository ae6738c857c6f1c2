#include "ttrace/report/verdict_text.h"

#include "ttrace/compare/verdict.h"
#include "ttrace/report/report_markdown.h"

#include <algorithm>
#include <sstream>

namespace ttrace {
namespace {

const Diagnostic* firstError(const Diagnostics& diagnostics) {
    const auto it = std::find_if(diagnostics.begin(), diagnostics.end(),
                                 [](const Diagnostic& d) { return d.severity == Severity::Error; });
    return it == diagnostics.end() ? nullptr : &*it;
}

// "location: message" without the severity word, for a sentence that carries its own.
std::string placed(const Diagnostic& d) {
    return d.location.empty() ? d.message : d.location + ": " + d.message;
}

} // namespace

std::optional<PairRefusal> pairRefusal(const Diagnostics& diagnostics) {
    // The codes of compare/pair_checks.h, in the order that check reports them.
    static const std::pair<DiagnosticCode, PairProblem> kCodes[] = {
        {DiagnosticCode::SameBundle, PairProblem::SameBundle},
        {DiagnosticCode::SwappedRoles, PairProblem::SwappedRoles},
        {DiagnosticCode::RoleMismatch, PairProblem::RoleMismatch},
    };
    for (const auto& d : diagnostics) {
        for (const auto& [code, problem] : kCodes) {
            if (d.severity == Severity::Error && d.code == code) {
                return PairRefusal{problem, d};
            }
        }
    }
    return std::nullopt;
}

std::string unresolvedText(std::size_t count) {
    return std::to_string(count) + (count == 1 ? " tensor's" : " tensors'") +
           " inferred placement is unresolved (more than one layout, or none, fits the "
           "evidence; annotate it to compare it)";
}

namespace {

// Why a run is neither clean nor divergent, the first cause that applies.
std::string unresolvedCause(const DiffSummary& s) {
    if (s.unresolved > 0) {
        return unresolvedText(s.unresolved);
    }
    if (s.provisionalOverBound > 0) {
        return std::to_string(s.provisionalOverBound) +
               " provisional tensors exceed their analytic bound (capture the reference with "
               "perturbed variants to judge them)";
    }
    return std::to_string(s.unstableOverBound) +
           (s.unstableOverBound == 1 ? " tensor exceeds" : " tensors exceed") +
           " a floor whose perturbed variants disagree by more than " +
           formatNumber(kUnstableFloorFactor) +
           "x, by less than they disagree (capture more variants to judge them)";
}

} // namespace

std::string verdictLine(const DiffResult& r) {
    const auto& s = r.summary;
    if (const auto refusal = pairRefusal(r.diagnostics)) {
        return "INVALID: not compared: " + placed(refusal->diagnostic);
    }
    const std::string provisional = s.provisional == 0
                                        ? std::string()
                                        : "; " + std::to_string(s.provisional) +
                                              " tensors provisional (analytic bound only), " +
                                              std::to_string(s.provisionalOverBound) + " over it";
    switch (runVerdict(r)) {
    case RunVerdict::Clean:
        return std::string(s.provisional == 0 ? "CLEAN: every tensor is within its round-off "
                                                "tolerance"
                                              : "CLEAN (provisional): every tensor judged with "
                                                "confidence is within its round-off tolerance") +
               (r.convention ? "; the capture-side gradients after one convention factor, " +
                                   r.convention->factorName + " (see 'convention mismatch')"
                             : "") +
               provisional;
    case RunVerdict::Divergent:
        return "DIVERGENT: " + std::to_string(s.divergent) +
               " tensors diverge beyond round-off; every tensor was valid" +
               (s.unresolved > 0 ? "; " + unresolvedText(s.unresolved) : "") + provisional;
    case RunVerdict::Unresolved:
        return "UNRESOLVED: " + unresolvedCause(s) +
               "; every tensor judged with confidence is within its round-off tolerance" +
               provisional;
    case RunVerdict::Drift:
        return "DRIFT: no tensor diverges beyond round-off except " + driftText(s) + provisional;
    case RunVerdict::Invalid: break;
    }
    if (r.tensors.empty() && !r.cancelled) {
        const Diagnostic* error = firstError(r.diagnostics);
        return "INVALID: not compared: " + (error ? placed(*error) : "no tensor to compare");
    }
    std::string why =
        std::to_string(s.invalid) + " invalid, " + std::to_string(s.missing) + " missing tensors";
    if (s.unresolved > 0) {
        why += ", " + std::to_string(s.unresolved) + " unresolved";
    }
    if (hasErrors(r.diagnostics)) {
        why += ", bundle errors";
    }
    if (r.cancelled) {
        why += ", cancelled";
    }
    return "INVALID: " + why +
           (s.divergent > 0 ? "; " + std::to_string(s.divergent) + " divergent" : "") +
           ": verdicts are unreliable until the input is fixed";
}

std::string provisionalVerdictText(const DiffResult& r) {
    const auto& s = r.summary;
    if (s.provisional == 0) {
        return {};
    }
    std::string text = "Provisional (analytic bound only): " + std::to_string(s.provisional) +
                       " tensors of the optimizer step and of later steps have no perturbed "
                       "reference variants and no sound analytic bound, so they are judged "
                       "neither clean nor divergent";
    if (s.provisionalOverBound > 0) {
        text += "; " + std::to_string(s.provisionalOverBound) +
                " exceed the provisional bound (max ratio " + formatNumber(s.provisionalMaxRatio) +
                ")";
    }
    return text + ". Capture the reference with perturbed variants (Perturbation(count=2)) to "
                  "judge them.";
}

std::string unstableFloorText(const DiffResult& r) {
    const auto& s = r.summary;
    if (s.unstableFloors == 0) {
        return {};
    }
    std::string text = std::to_string(s.unstableFloors) +
                       (s.unstableFloors == 1 ? " tensor's floor rests" : " tensors' floors rest") +
                       " on variants that disagree by more than " +
                       formatNumber(kUnstableFloorFactor) +
                       "x: capture more variants (--perturbations N)";
    if (s.unstableOverBound > 0) {
        text += "; " + std::to_string(s.unstableOverBound) +
                (s.unstableOverBound == 1 ? " of them exceeds its" : " of them exceed their") +
                " tolerance by less than its variants disagree (max ratio " +
                formatNumber(s.unstableMaxRatio) + ") and is judged provisionally, not divergent";
    }
    return text + ".";
}

std::string_view tensorVerdictName(const TensorResult& t) {
    const bool provisional = t.tolerance.provisional != Provisional::None ||
                             (t.status == Status::Clean && unstableOverBound(t.ratio, t.tolerance));
    return provisional ? "provisional" : statusName(t.status);
}

std::string verdictCaveat(const DiffResult& r) {
    std::string out;
    for (const auto& part :
         {incompleteVerdictText(r), provisionalVerdictText(r), unstableFloorText(r)}) {
        if (!part.empty()) {
            out += (out.empty() ? "" : "\n") + part;
        }
    }
    return out;
}

std::string incompleteVerdictText(const DiffResult& r) {
    if (r.tensors.empty() || pairRefusal(r.diagnostics) || runVerdict(r) != RunVerdict::Invalid) {
        return {};
    }
    std::string why;
    if (const Diagnostic* error = firstError(r.diagnostics)) {
        why = placed(*error);
    }
    if (const auto earlier = earlierUncomparedText(r); !earlier.empty()) {
        why += (why.empty() ? "" : "; ") + earlier;
    }
    if (why.empty() && r.firstDivergence) {
        // Invalid tensors after the first divergence: the story's start stands, its end may not.
        why = std::to_string(r.summary.invalid + r.summary.missing) +
              " tensors could not be compared";
    }
    return why.empty() ? std::string() : "Verdict incomplete: " + why;
}

} // namespace ttrace
