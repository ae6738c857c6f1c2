#include "ttrace/report/report_markdown.h"
#include "ttrace/compare/run_layout.h"

#include "ttrace/compare/verdict.h"
#include "ttrace/report/verdict_text.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string_view>

namespace ttrace {
namespace {

std::string origins(const DiffResult& r, Origin wanted) {
    std::string names;
    for (const auto& m : r.modules) {
        if (m.origin == wanted) {
            names += (names.empty() ? "`" : ", `") + m.name + "`";
        }
    }
    return names.empty() ? "none" : names;
}

// Pipes would end a table cell.
std::string cell(std::string text) {
    for (std::size_t pos = 0; (pos = text.find('|', pos)) != std::string::npos; pos += 2) {
        text.replace(pos, 1, "\\|");
    }
    return text;
}

std::string rankText(const std::vector<int>& ranks) {
    std::string out;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    }
    return out.empty() ? "-" : out;
}

void appendFirstDivergence(std::ostringstream& md, const DiffResult& r) {
    md << "## First divergence\n\n";
    const auto earlier = earlierUncomparedText(r);
    if (!earlier.empty()) {
        md << "Not compared: " << earlier << ".\n\n";
    }
    if (!r.firstDivergence) {
        md << "None.\n\n";
        return;
    }
    const auto& f = *r.firstDivergence;
    const auto& t = r.tensors[f.tensor];
    md << "| | |\n|---|---|\n";
    md << "| iteration | " << f.iteration << " |\n";
    md << "| phase | " << phaseLabel(f.phase) << " |\n";
    md << "| module | `" << f.module << "` |\n";
    md << "| tensor | `" << cell(t.id.label()) << "` (ratio " << formatNumber(t.ratio) << ") |\n";
    md << "| ranks carrying the error | " << rankText(f.ranks) << " |\n";
    if (!f.alsoInPhase.empty()) {
        std::string also;
        for (const auto& m : f.alsoInPhase) {
            also += (also.empty() ? "`" : ", `") + m + "`";
        }
        md << "| also diverging in this phase | " << also << " |\n";
    }
    for (const auto& sig : t.signatures) {
        md << "| error shape | " << cell(sig.summary) << " (" << cell(sig.evidence) << ") |\n";
    }
    if (!t.hint.text.empty()) {
        md << "| likely bug class | "
           << (t.hint.bugClass.empty() ? "" : "`" + t.hint.bugClass + "`: ") << cell(t.hint.text)
           << " |\n";
    }
    md << "\n";
}

void appendInvalid(std::ostringstream& md, const DiffResult& r) {
    bool any = false;
    for (const auto i : r.timeline) {
        const auto& t = r.tensors[i];
        if (severity(t.status) <= severity(Status::Divergent)) {
            continue;
        }
        if (!any) {
            md << "\n## Invalid, missing or unresolved tensors\n\n| tensor | status | why "
                  "|\n|---|---|---|\n";
            any = true;
        }
        md << "| `" << cell(t.id.label()) << "` | " << tensorVerdictName(t) << " | "
           << cell(t.status == Status::Unresolved ? t.resolution.toString() : t.invalid.toString())
           << " |\n";
    }
}

} // namespace

namespace {

// Optimizer-step tensors among the worst: how many elements are ill-conditioned and which
// elements drive the ratio (docs/tolerance.md, "Optimizer-step conditioning").
void appendConditioning(std::ostringstream& md, const DiffResult& r,
                        const std::vector<std::size_t>& worst) {
    bool any = false;
    for (const auto i : worst) {
        const auto& t = r.tensors[i];
        if (t.conditioning.topElements.empty()) {
            continue;
        }
        if (!any) {
            md << "\nElements driving the ratio of optimizer-step tensors (error / element "
                  "tolerance; the conditioning term widens an ill-conditioned element's "
                  "tolerance):\n\n";
            any = true;
        }
        md << "- `" << cell(t.id.label()) << "`: " << t.conditioning.illConditioned
           << " ill-conditioned elements;";
        for (const auto& e : t.conditioning.topElements) {
            md << " [" << e.index << "] " << formatNumber(e.error) << " / "
               << formatNumber(e.tolerance) << " (conditioning " << formatNumber(e.conditioning)
               << ");";
        }
        md << "\n";
    }
}

std::string_view verdictHeading(RunVerdict verdict) {
    switch (verdict) {
    case RunVerdict::Clean: return "clean";
    case RunVerdict::Divergent: return "DIVERGENT";
    case RunVerdict::Unresolved: return "UNRESOLVED";
    case RunVerdict::Drift: return "drift";
    case RunVerdict::Invalid: break;
    }
    return "INVALID";
}

// Rows that appear only when they say something: environment, drift, provisional, floors.
void appendVerdictNotes(std::ostringstream& md, const DiffResult& r) {
    const auto& s = r.summary;
    if (!s.environmentChanges.empty()) {
        md << "| environment differs | " << cell(environmentText(s)) << " |\n";
    }
    if (s.drift > 0) {
        md << "| drift | " << cell(driftText(s)) << " |\n";
    }
    if (const auto provisional = provisionalVerdictText(r); !provisional.empty()) {
        md << "| provisional | " << cell(provisional) << " |\n";
    }
    if (const auto unstable = unstableFloorText(r); !unstable.empty()) {
        md << "| unstable floors | " << cell(unstable) << " |\n";
    }
}

// The table under the heading: what was compared with what, and the run's verdict lines.
void appendSummaryTable(std::ostringstream& md, const DiffResult& r) {
    const auto& s = r.summary;
    md << "| | |\n|---|---|\n";
    md << "| reference | `" << s.referenceDir << "` (" << sideLayoutText(s, true) << ", "
       << s.perturbedVariants << " perturbed variants) |\n";
    md << "| candidate | `" << s.candidateDir << "` (" << sideLayoutText(s, false) << ") |\n";
    if (const auto note = distributedReferenceNote(s.referenceRanks); !note.empty()) {
        md << "| blind spot | " << cell(note) << " |\n";
    }
    md << "| precision | " << (s.precision.empty() ? "unknown" : s.precision) << " |\n";
    md << "| tensors | " << s.compared << " compared, " << s.divergent << " divergent ("
       << s.structural << " structural), " << s.missing << " missing, " << s.invalid << " invalid, "
       << s.unresolved << " unresolved |\n";
    if (!s.gradientConvention.empty()) {
        md << "| gradient convention | " << cell(s.gradientConvention) << " |\n";
    }
    if (r.convention) {
        md << "| convention mismatch | " << cell(r.convention->toString()) << " |\n";
    }
    md << "| max ratio (error / tolerance) | " << formatNumber(s.maxRatio) << " |\n";
    appendVerdictNotes(md, r);
    md << "| first divergence, forward | "
       << (r.firstForwardDivergence ? "`" + *r.firstForwardDivergence + "`" : "none") << " |\n";
    md << "| first divergence, backward | "
       << (r.firstBackwardDivergence ? "`" + *r.firstBackwardDivergence + "`" : "none") << " |\n";
    md << "| divergence introduced in (offline estimate) | " << origins(r, Origin::Introduced)
       << " |\n\n";
}

void appendDivergentModules(std::ostringstream& md, const DiffResult& r) {
    md << "## Divergent modules (execution order)\n\n";
    bool any = false;
    for (const auto& m : r.modules) {
        if (m.status == Status::Clean) {
            continue;
        }
        if (!any) {
            md << "| module | type | status | max ratio | input ratio | output ratio | origin "
                  "|\n|---|---|---|---:|---:|---:|---|\n";
            any = true;
        }
        md << "| `" << m.name << "` | " << cell(m.type) << " | " << statusName(m.status) << " | "
           << formatNumber(m.maxRatio) << " | " << formatNumber(m.inputRatio) << " | "
           << formatNumber(m.outputRatio) << " | " << originName(m.origin) << " |\n";
    }
    md << (any ? "\n" : "None.\n\n");
}

void appendWorstTensors(std::ostringstream& md, const DiffResult& r,
                        const std::vector<std::size_t>& worst) {
    md << "## Worst tensors\n\n";
    md << "| tensor | status | rel. error | tolerance | ratio | tolerance source | placement "
          "|\n|---|---|---:|---:|---:|---|---|\n";
    for (const auto i : worst) {
        const auto& t = r.tensors[i];
        md << "| `" << cell(t.id.label()) << "` | " << tensorVerdictName(t)
           << (t.signatures.empty() ? "" : " (" + cell(t.signatures.front().summary) + ")") << " | "
           << formatNumber(t.metrics.relError) << " | " << formatNumber(t.tolerance.value) << " | "
           << formatNumber(t.ratio) << " | " << t.tolerance.source.name() << " | "
           << cell(t.placement) << " |\n";
    }
}

void appendFindings(std::ostringstream& md, const DiffResult& r) {
    Diagnostics all = r.diagnostics;
    for (const auto& t : r.tensors) {
        for (const auto& f : t.findings) {
            // Errors, and replicas that disagree: a warning about the bundle but evidence
            // about the run that belongs in a bug report.
            if (f.severity == Severity::Error || f.code == DiagnosticCode::ReplicaDisagree) {
                all.push_back(f);
            }
        }
    }
    if (!all.empty()) {
        md << "\n## Findings\n\n";
        for (const auto& d : all) {
            md << "- " << d.toString() << "\n";
        }
    }
}

} // namespace

std::string diffResultToMarkdown(const DiffResult& r, const MarkdownOptions& options) {
    std::ostringstream md;
    md << "# TTrace diff: " << verdictHeading(runVerdict(r)) << "\n\n";
    appendFirstDivergence(md, r);
    appendSummaryTable(md, r);
    appendDivergentModules(md, r);
    const auto worst = worstTensors(r, options.worstTensors);
    appendWorstTensors(md, r, worst);
    appendConditioning(md, r, worst);
    appendInvalid(md, r);
    appendFindings(md, r);
    md << "\nRatio = relative Frobenius error / derived tolerance; above 1 is beyond round-off. "
          "Tolerances: see docs/tolerance.md of TTrace Explorer.\n";
    return md.str();
}

} // namespace ttrace
