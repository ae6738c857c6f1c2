#include "ttrace/io/diagnostic.h"

#include <algorithm>
#include <utility>

namespace ttrace {

std::string Diagnostic::toString() const {
    std::string out = severity == Severity::Error ? "error" : "warning";
    if (!location.empty()) {
        out += ": ";
        out += location;
    }
    out += ": ";
    out += message;
    return out;
}

bool hasErrors(const Diagnostics& diagnostics) {
    return std::any_of(diagnostics.begin(), diagnostics.end(),
                       [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

Diagnostic makeError(DiagnosticCodeValue code, std::string location, std::string message) {
    return {Severity::Error, code, std::move(location), std::move(message)};
}

Diagnostic makeWarning(DiagnosticCodeValue code, std::string location, std::string message) {
    return {Severity::Warning, code, std::move(location), std::move(message)};
}

} // namespace ttrace
