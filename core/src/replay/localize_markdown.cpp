#include "ttrace/replay/localize_report.h"

#include "ttrace/report/report_markdown.h"

#include <algorithm>
#include <sstream>

namespace ttrace::replay {
namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
        out += (out.empty() ? "" : ", ") + n;
    }
    return out;
}

std::string moduleLabel(const ModuleVerdict& v) {
    const std::string name = v.suspect.module.empty() ? "(every parameter)" : v.suspect.module;
    return std::string(static_cast<std::size_t>(2 * v.level), ' ') + name;
}

// Markdown table cells must not contain pipes or newlines.
std::string cell(std::string text) {
    for (auto& ch : text) {
        if (ch == '|' || ch == '\n') {
            ch = ' ';
        }
    }
    return text;
}

// Where a divergence that no replayed module introduces must enter, by the phase it starts in;
// the gradient clipping by name, with the diff's words on it, when the step's recorded clip
// coefficients differ.
std::string unreplayedEntry(const DivergenceStart& start,
                            const std::optional<ClipComparison>& clipping) {
    const char* where = "the gradient reduction, the gradient clipping (its global norm and "
                        "coefficient) or the optimizer step of an earlier iteration";
    const std::string head =
        "no replayed module introduces it, yet the run diverges from iteration " +
        std::to_string(start.iteration) + ", " + std::string(localizePhaseName(start.phase)) +
        ": every replayed module agrees given the reference's inputs, so the divergence "
        "enters where no module runs: ";
    if (clipping) {
        return head + "the gradient clipping (" + clipping->toString() + ")";
    }
    if (start.phase == LocalizePhase::Reduction) {
        where = "the gradient reduction or the gradient clipping (its global norm and "
                "coefficient)";
    } else if (start.phase == LocalizePhase::Step) {
        where = "the gradient clipping (its global norm and coefficient) or the optimizer "
                "step's own inputs (learning rate, state)";
    }
    return head + where;
}

std::string suspectName(const ModuleVerdict& v) {
    return v.suspect.module.empty() ? std::string("the step") : v.suspect.module;
}

// Every replayed module agrees and the divergence enters where no module runs.
std::string outsideEveryModule(const TensorId& entry) {
    const bool grad = entry.kind == TensorKind::OutputGrad;
    return "introduced outside every module: every replayed module agrees given the "
           "reference's inputs; the divergence enters at " +
           entry.module + " " + std::string(tensorKindName(entry.kind)) + " (iteration " +
           std::to_string(entry.iteration) + ", micro-batch " + std::to_string(entry.microBatch) +
           "), " +
           (grad ? "the gradient the schedule feeds backward (its loss scaling)"
                 : "the input the job feeds forward (its data)");
}

// No replay could judge the divergence: why, from the first module that could not be replayed.
std::string notReplayed(const LocalizeResult& r) {
    if (!r.start) {
        // Named modules, none replayed (e.g. every one refused by a relaunch smaller than the
        // job): nothing can be said to agree.
        const auto& first = r.verdicts.front();
        return "not localized: no named module could be replayed; " + suspectName(first) + ": " +
               first.reason;
    }
    std::string text = "not localized: the divergence (iteration " +
                       std::to_string(r.start->iteration) + ", " +
                       std::string(localizePhaseName(r.start->phase)) + ") could not be replayed";
    for (const auto& v : r.verdicts) {
        if (v.verdict == Verdict::NotReplayable) {
            text += "; " + suspectName(v) + ": " + v.reason;
            break; // the first reason; the table has them all
        }
    }
    return text;
}

// Every replay agrees: nothing introduced, saying which named modules could not be judged.
std::string nothingIntroduced(const LocalizeResult& r) {
    const auto unjudged = std::count_if(r.verdicts.begin(), r.verdicts.end(), [](const auto& v) {
        return v.verdict == Verdict::NotReplayable;
    });
    if (unjudged > 0) {
        return "nothing introduced among the replayed modules: each agrees given the "
               "reference's inputs; " +
               std::to_string(unjudged) + " named module(s) could not be replayed";
    }
    return "nothing introduced: every replayed module agrees given the reference's inputs";
}

} // namespace

std::string localizeConclusion(const LocalizeResult& r) {
    // A walk that stopped early, or a run refused before any replay (a reference that cannot
    // be opened, bundles with errors), has no answer, whatever it found before: never
    // "nothing diverges" or "nothing introduced"; the first problem says why.
    if (!r.problems.empty()) {
        const auto& p = r.problems.front();
        return "not localized: the replays stopped at an error (" +
               (p.location.empty() ? p.message : p.location + ": " + p.message) + ")";
    }
    if (r.cancelled) {
        return "not localized: cancelled before the replays finished";
    }
    if (r.guiltyPhase) {
        return "introduced in " + std::string(localizePhaseName(*r.guiltyPhase)) +
               (r.guiltyParameters.empty() ? std::string()
                                           : ": parameters of " + joined(r.guiltyParameters));
    }
    if (!r.guilty.empty()) {
        return "introduced in: " + joined(r.guilty);
    }
    if (r.entry) {
        return outsideEveryModule(*r.entry);
    }
    if (!r.start && r.verdicts.empty()) {
        return "nothing diverges";
    }
    if (r.undetermined()) {
        return notReplayed(r);
    }
    if (r.enteredUnreplayed()) {
        return unreplayedEntry(*r.start, r.clipping);
    }
    // Named modules (no walk): say which could not be judged rather than "every module agrees".
    return nothingIntroduced(r);
}

std::string localizeResultToMarkdown(const LocalizeResult& r, const LocalizeContext& c) {
    std::ostringstream out;
    out << "# TTrace localize\n\n";
    out << "- reference: `" << c.reference << "`\n- candidate: `" << c.candidate << "`\n";
    out << "- agent: " << c.agent << " at `" << c.endpoint << "` (" << c.worldSize << " ranks)\n";
    if (r.start) {
        out << "- first divergence: iteration " << r.start->iteration << ", "
            << localizePhaseName(r.start->phase) << "\n";
    }
    out << "\n**" << localizeConclusion(r) << "**\n\n";
    if (!r.verdicts.empty()) {
        out << "| module | phase | iteration | micro-batch | verdict | replay ratio | diff ratio | "
               "time (s) |\n|---|---|---|---|---|---|---|---|\n";
        for (const auto& v : r.verdicts) {
            out << "| `" << cell(moduleLabel(v)) << "` | " << localizePhaseName(v.suspect.phase)
                << " | " << v.suspect.iteration << " | " << v.suspect.microBatch << " | "
                << verdictName(v.verdict) << (v.reason.empty() ? "" : " (" + cell(v.reason) + ")")
                << " | " << formatNumber(v.ratio) << " | " << formatNumber(v.suspect.diffRatio)
                << " | " << formatNumber(v.seconds) << " |\n";
        }
    }
    for (const auto& p : r.problems) {
        out << "\n> " << cell(p.toString()) << "\n";
    }
    out << "\nReplay ratio: the module's error given the reference's inputs over its own round-off "
           "floor, measured by replaying the reference's perturbed inputs (docs/tolerance.md, "
           "\"Localize\"). Above 1: the module introduces the divergence.\n";
    return out.str();
}

} // namespace ttrace::replay
