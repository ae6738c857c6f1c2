#include "diff_summary.h"

#include "ttrace/compare/run_layout.h"
#include "ttrace/compare/verdict.h"
#include "ttrace/report/report_markdown.h"
#include "ttrace/report/verdict_text.h"

#include <iomanip>

namespace ttrace::cli {
namespace {

constexpr std::size_t kMaxInvalidRows = 20;

std::string withOrigin(const DiffResult& r, const std::optional<std::string>& name) {
    if (!name) {
        return "none";
    }
    const auto* m = r.module(*name);
    return *name + (m ? " (" + std::string(originName(m->origin)) + ")" : "");
}

std::string joined(const std::vector<std::string>& names, std::size_t max) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < max; ++i) {
        out += (i ? ", " : "") + names[i];
    }
    return names.size() > max ? out + ", ... (" + std::to_string(names.size()) + " modules)" : out;
}

// What differs in structure at the first divergence's module call (any of its tensors: the
// headline may be a value that the same change made wrong), as the findings name it.
void printStructure(std::ostream& out, const DiffResult& r, const TensorResult& first) {
    for (const auto& t : r.tensors) {
        if (t.structure == StructuralChange::None || t.id.module != first.id.module ||
            t.id.iteration != first.id.iteration || t.id.microBatch != first.id.microBatch) {
            continue;
        }
        for (const auto& f : t.findings) {
            if (f.code == structuralDiagnosticCode(t.structure)) {
                out << "  structure       " << f.code.name() << ": " << f.message << "\n";
            }
        }
    }
}

// The first divergence on the timeline, its error's shape and the bug class it suggests.
void printFirstDivergence(std::ostream& out, const DiffResult& r) {
    const auto earlier = earlierUncomparedText(r);
    if (!r.firstDivergence) {
        out << "first divergence  none\n";
        if (!earlier.empty()) {
            out << "  not compared    " << earlier << "\n";
        }
        return;
    }
    const auto& f = *r.firstDivergence;
    const auto& t = r.tensors[f.tensor];
    out << "first divergence  iteration " << f.iteration << ", " << phaseLabel(f.phase) << ": "
        << f.module << " " << tensorKindName(f.kind) << " (" << describeRanks(f.ranks) << ", ratio "
        << formatNumber(t.ratio) << ")\n";
    if (!earlier.empty()) {
        out << "  not compared    " << earlier << "\n";
    }
    if (!f.alsoInPhase.empty()) {
        out << "  same phase      " << joined(f.alsoInPhase, 6) << "\n";
    }
    printStructure(out, r, t);
    for (const auto& s : t.signatures) {
        out << "  error shape     " << s.summary << " [" << s.evidence << "]\n";
    }
    if (!t.hint.text.empty()) {
        out << "  hint            " << (t.hint.bugClass.empty() ? "" : t.hint.bugClass + ": ")
            << t.hint.text << "\n";
    }
}

void printWorst(std::ostream& out, const DiffResult& r, std::size_t rows) {
    const auto worst = worstTensors(r, rows);
    if (worst.empty()) {
        return;
    }
    out << "\nworst tensors:\n";
    out << "  " << std::left << std::setw(10) << "status" << std::right << std::setw(10) << "ratio"
        << std::setw(11) << "error" << std::setw(11) << "tolerance"
        << "  " << std::left << std::setw(10) << "source"
        << "tensor\n";
    for (const auto i : worst) {
        const auto& t = r.tensors[i];
        out << "  " << std::left << std::setw(10) << tensorVerdictName(t) << std::right
            << std::setw(10) << formatNumber(t.ratio) << std::setw(11)
            << formatNumber(t.metrics.relError) << std::setw(11) << formatNumber(t.tolerance.value)
            << "  " << std::left << std::setw(10) << t.tolerance.source.name() << t.id.label()
            << "\n";
        if (!t.signatures.empty()) {
            out << "      shape: " << t.signatures.front().summary << "\n";
        }
        if (t.structure != StructuralChange::None) {
            out << "      structure: " << structuralChangeName(t.structure) << "\n";
        }
    }
    out << std::right;
}

// Every tensor that could not be compared, with why and what would fix it.
void printInvalid(std::ostream& out, const DiffResult& r) {
    std::size_t shown = 0;
    for (const auto i : r.timeline) {
        const auto& t = r.tensors[i];
        if (severity(t.status) <= severity(Status::Divergent)) {
            continue;
        }
        if (shown == 0) {
            out << "\ninvalid, missing or unresolved tensors:\n";
        }
        if (++shown > kMaxInvalidRows) {
            out << "  ... (" << (r.summary.invalid + r.summary.missing + r.summary.unresolved)
                << " in all; --json lists every one)\n";
            return;
        }
        out << "  " << statusName(t.status) << "  " << t.id.label() << "\n";
        if (t.status == Status::Unresolved) {
            out << "      " << t.resolution.toString() << "\n";
        } else if (!t.invalid.empty()) {
            out << "      why: " << t.invalid.toString() << "\n";
        }
        for (const auto& f : t.findings) {
            if (f.severity == Severity::Error || f.code == DiagnosticCode::MissingTensor) {
                out << "      " << f.code.name() << ": " << f.message << "\n";
            }
        }
    }
}

} // namespace

std::string describeRanks(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    }
    return ranks.empty() ? "no rank" : out;
}

void printDiffSummary(std::ostream& out, const DiffResult& r, std::size_t worstRows) {
    const auto& s = r.summary;
    // Said before the story it qualifies: a missing partial sum looks like a divergence.
    if (const auto incomplete = incompleteVerdictText(r); !incomplete.empty()) {
        out << incomplete << "\n";
    }
    printFirstDivergence(out, r);
    out << "reference  " << s.referenceDir << " (" << sideLayoutText(s, true) << ", "
        << (s.precision.empty() ? "?" : s.precision) << ", " << s.perturbedVariants
        << " perturbed variants)\n";
    if (const auto note = distributedReferenceNote(s.referenceRanks); !note.empty()) {
        out << "           " << note << "\n";
    }
    out << "candidate  " << s.candidateDir << " (" << sideLayoutText(s, false) << ")\n";
    out << "tensors    " << s.compared << " compared, " << s.divergent << " divergent"
        << (s.structural ? " (" + std::to_string(s.structural) + " structural)" : "") << ", "
        << s.missing << " missing, " << s.invalid << " invalid, " << s.unresolved
        << " unresolved\n";
    out << "max ratio  " << formatNumber(s.maxRatio) << " (error / tolerance; above 1 is a bug)\n";
    // Said only when there is something to say: the two captures' environments differ.
    if (!s.environmentChanges.empty()) {
        out << "environment  " << environmentText(s) << "\n";
    }
    if (s.drift > 0) {
        out << "drift      " << driftText(s) << "\n";
    }
    if (const auto provisional = provisionalVerdictText(r); !provisional.empty()) {
        out << provisional << "\n";
    }
    if (const auto unstable = unstableFloorText(r); !unstable.empty()) {
        out << unstable << "\n";
    }
    if (!s.gradientConvention.empty()) {
        out << "gradients  " << s.gradientConvention << "\n";
    }
    if (r.convention) {
        out << "convention mismatch  " << r.convention->factorName << ": "
            << r.convention->toString() << "\n";
    }
    for (const auto& c : r.clipping) {
        out << "clipping   " << c.toString() << "\n";
    }
    out << "first by kind     forward: " << withOrigin(r, r.firstForwardDivergence)
        << "   backward: " << withOrigin(r, r.firstBackwardDivergence) << "\n";
    std::vector<std::string> introduced;
    for (const auto& m : r.modules) {
        if (m.origin == Origin::Introduced) {
            introduced.push_back(m.name);
        }
    }
    if (!introduced.empty()) {
        out << "introduced in     " << joined(introduced, 8)
            << " (offline estimate; localize to confirm)\n";
    }
    printWorst(out, r, worstRows);
    printInvalid(out, r);
    out << "\n" << verdictLine(r) << "\n";
}

} // namespace ttrace::cli
