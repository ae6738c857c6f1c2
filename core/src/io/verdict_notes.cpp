#include "ttrace/io/verdict_notes.h"

#include <algorithm>
#include <iterator>

namespace ttrace {

bool isVerdictNote(DiagnosticCode code) {
    switch (code) {
    case DiagnosticCode::EnvironmentDiffers:
    case DiagnosticCode::KernelDrift:
    case DiagnosticCode::ClipCoefficient:
    case DiagnosticCode::ConventionFactor:
    case DiagnosticCode::MissingInCandidate:
    case DiagnosticCode::ExtraInCandidate:
    case DiagnosticCode::ShapeChanged: return true;
    default: return false;
    }
}

Diagnostics openingProblems(const Diagnostics& diagnostics) {
    Diagnostics out;
    std::copy_if(diagnostics.begin(), diagnostics.end(), std::back_inserter(out),
                 [](const Diagnostic& d) { return !isVerdictNote(d.code.value()); });
    return out;
}

} // namespace ttrace
