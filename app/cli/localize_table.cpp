#include "localize_table.h"

#include "ttrace/replay/localize_report.h"
#include "ttrace/replay/localize_text.h"
#include "ttrace/replay/localize_walk.h"
#include "ttrace/replay/relaunch_layout_text.h"
#include "ttrace/report/report_markdown.h"

#include <iomanip>

namespace ttrace::cli {

using namespace ttrace::replay;

void LocalizeTable::agentLine(const AgentInfo& agent, const std::string& address) {
    out_ << "agent      " << agent.agent << " at " << address << " (" << agent.worldSize
         << " ranks, " << (agent.precision.empty() ? "?" : agent.precision) << ", "
         << agent.modules.size() << " modules)\n";
    if (!agent.relaunched) {
        return;
    }
    if (const auto layout = relaunchLayoutLine(agent); !layout.empty()) {
        out_ << "layout     " << layout << "\n";
    }
    // Before any verdict: a replay judges the code it runs, not the code that was captured.
    if (agent.codeChanges.empty()) {
        out_ << "code       relaunched from the bundles; the same code as captured\n";
        return;
    }
    out_ << "code       relaunched from the bundles; CHANGED since capture (verdicts judge the "
            "code run now):\n";
    for (const auto& line : agent.codeChanges) {
        out_ << "             " << line << "\n";
    }
}

void LocalizeTable::diffLine(const DiffResult& diff) {
    const auto& s = diff.summary;
    out_ << "diff       " << s.compared << " tensors compared, " << s.divergent
         << " divergent, max ratio " << formatNumber(s.maxRatio) << "\n";
    if (const auto start = firstDivergenceStart(diff)) {
        out_ << "first divergence in iteration " << start->iteration << ", "
             << localizePhaseName(start->phase) << "\n";
    }
}

void LocalizeTable::header() {
    out_ << "\n  " << std::left << std::setw(44) << "module" << std::setw(20) << "phase"
         << std::setw(16) << "verdict" << std::right << std::setw(12) << "replay ratio"
         << std::setw(9) << "time (s)"
         << "\n";
}

void LocalizeTable::row(const ModuleVerdict& v) {
    if (!headerShown_) {
        header(); // only when something is replayed
        headerShown_ = true;
    }
    const std::string name = std::string(static_cast<std::size_t>(2 * v.level), ' ') +
                             (v.suspect.module.empty() ? "(every parameter)" : v.suspect.module);
    out_ << "  " << std::left << std::setw(44) << name << std::setw(20)
         << localizePhaseName(v.suspect.phase) << std::setw(16) << verdictName(v.verdict)
         << std::right << std::setw(12) << formatNumber(v.ratio) << std::setw(9) << std::fixed
         << std::setprecision(2) << v.seconds << std::defaultfloat << "\n";
    if (!v.reason.empty()) {
        out_ << "      " << v.reason << "\n";
    }
    out_ << std::flush;
}

void LocalizeTable::conclusion(const LocalizeResult& r) {
    // A problem says its own severity ("error: LOCATION: ..."): printed as it is.
    for (const auto& p : r.problems) {
        out_ << "\n" << p.toString() << "\n";
    }
    out_ << "\n" << localizeVerdictLine(r) << "\n";
}

} // namespace ttrace::cli
