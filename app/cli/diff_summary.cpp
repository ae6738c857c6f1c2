#include "diff_summary.h"

#include "ttrace/report_markdown.h"
#include "ttrace/verdict.h"

#include <iomanip>

namespace ttrace::cli {
namespace {

std::string withOrigin(const DiffResult& r, const std::optional<std::string>& name) {
    if (!name) {
        return "none";
    }
    const auto* m = r.module(*name);
    return *name + (m ? " (" + std::string(originName(m->origin)) + ")" : "");
}

} // namespace

void printDiffSummary(std::ostream& out, const DiffResult& r, std::size_t worstRows) {
    const auto& s = r.summary;
    out << "reference  " << s.referenceDir << " (" << s.referenceRanks << " rank"
        << (s.referenceRanks == 1 ? "" : "s") << ", " << (s.precision.empty() ? "?" : s.precision)
        << ", " << s.perturbedVariants << " perturbed variants)\n";
    out << "candidate  " << s.candidateDir << " (" << s.candidateRanks << " rank"
        << (s.candidateRanks == 1 ? "" : "s") << ")\n";
    out << "tensors    " << s.compared << " compared, " << s.divergent << " divergent, "
        << s.missing << " missing, " << s.invalid << " invalid\n";
    out << "max ratio  " << formatNumber(s.maxRatio) << " (error / tolerance; above 1 is a bug)\n";
    out << "first divergence  forward: " << withOrigin(r, r.firstForwardDivergence)
        << "   backward: " << withOrigin(r, r.firstBackwardDivergence) << "\n";
    std::string introduced;
    for (const auto& m : r.modules) {
        if (m.origin == Origin::Introduced) {
            introduced += (introduced.empty() ? "" : ", ") + m.name;
        }
    }
    if (!introduced.empty()) {
        out << "introduced in     " << introduced << " (offline estimate; localize to confirm)\n";
    }
    const auto worst = worstTensors(r, worstRows);
    if (!worst.empty()) {
        out << "\nworst tensors:\n";
        out << "  " << std::left << std::setw(10) << "status" << std::right << std::setw(10)
            << "ratio" << std::setw(11) << "error" << std::setw(11) << "tolerance"
            << "  " << std::left << std::setw(10) << "source"
            << "tensor\n";
        for (const auto i : worst) {
            const auto& t = r.tensors[i];
            out << "  " << std::left << std::setw(10) << statusName(t.status) << std::right
                << std::setw(10) << formatNumber(t.ratio) << std::setw(11)
                << formatNumber(t.metrics.relError) << std::setw(11)
                << formatNumber(t.tolerance.value) << "  " << std::left << std::setw(10)
                << t.tolerance.source << t.id.label() << "\n";
        }
        out << std::right;
    }
    out << "\n"
        << (s.clean ? "CLEAN: every tensor is within its round-off tolerance\n"
                    : "DIVERGENT: see above\n");
}

} // namespace ttrace::cli
