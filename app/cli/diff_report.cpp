#include "commands.h"
#include "diff_args.h"
#include "diff_summary.h"

#include "ttrace/compare/report_json.h"
#include "ttrace/compare/verdict.h"
#include "ttrace/report/report_markdown.h"
#include "ttrace/report/verdict_text.h"

#include <fstream>
#include <iostream>
#include <string>

namespace ttrace::cli {
namespace {

bool writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    return out && (out << text) && out.flush();
}

} // namespace

int reportDiff(const DiffResult& result, const DiffArgs& a, std::string_view command) {
    for (const auto& d : result.diagnostics) {
        std::cerr << d.toString() << "\n";
    }
    if (!a.json.empty() && !writeFile(a.json, diffResultToJson(result))) {
        std::cerr << command << ": cannot write " << a.json << "\n";
        return kExitBadInput;
    }
    if (!a.markdown.empty() && !writeFile(a.markdown, diffResultToMarkdown(result))) {
        std::cerr << command << ": cannot write " << a.markdown << "\n";
        return kExitBadInput;
    }
    const bool unusable = result.tensors.empty() && hasErrors(result.diagnostics);
    if (unusable) {
        std::cerr << command << ": the bundles could not be compared\n";
        if (!a.quiet) {
            std::cout << verdictLine(result) << "\n";
        }
        return exitCodeFor(result);
    }
    if (a.quiet) {
        std::cout << runVerdictName(runVerdict(result)) << "\n";
    } else {
        printDiffSummary(std::cout, result, a.top);
    }
    if (hasErrors(result.diagnostics)) {
        // A bundle with a missing or broken rank file: verdicts are unreliable (a missing
        // partial sum looks like a divergence), so this is bad input, not a bug finding.
        std::cerr << command << ": the bundles have errors (above); verdicts are unreliable\n";
    }
    return exitCodeFor(result);
}

} // namespace ttrace::cli
