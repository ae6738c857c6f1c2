#include "ttrace/compare/run_layout.h"

#include "ttrace/io/parallel_layout_text.h"

namespace ttrace {

std::string layoutText(const Manifest& manifest) {
    return parallelLayoutText(manifest.parallel, manifest.worldSize);
}

std::string sideLayoutText(const DiffSummary& summary, bool reference) {
    const auto& layout = reference ? summary.referenceLayout : summary.candidateLayout;
    // A report of an older build has no layout: its rank count says what it can.
    std::string text = layout.empty()
                           ? ranksText(reference ? summary.referenceRanks : summary.candidateRanks)
                           : layout;
    if (reference && summary.referenceRole == "candidate") {
        text += ", captured as a candidate: analytic bound only";
    }
    return text;
}

std::string distributedReferenceNote(int ranks) {
    return ranks > 1 ? "a distributed reference: a bug in code both layouts share cannot show"
                     : std::string();
}

} // namespace ttrace
