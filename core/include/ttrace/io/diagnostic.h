#pragma once
// A finding about a bundle: what is wrong, where (file, rank, tensor), and how bad.
// Readers never throw on bad input; they return these so every front end can show them.
#include <string>
#include <vector>

#include "ttrace/io/diagnostic_code.h"

namespace ttrace {

enum class Severity { Error, Warning };

struct Diagnostic {
    Severity severity = Severity::Error;
    DiagnosticCodeValue code = DiagnosticCode::InternalError; // the kind, e.g. MissingRankFile
    std::string location; // file, rank and/or tensor the finding is about
    std::string message;  // one sentence for a human

    [[nodiscard]] std::string toString() const;
};

using Diagnostics = std::vector<Diagnostic>;

[[nodiscard]] bool hasErrors(const Diagnostics& diagnostics);
Diagnostic makeError(DiagnosticCodeValue code, std::string location, std::string message);
Diagnostic makeWarning(DiagnosticCodeValue code, std::string location, std::string message);

} // namespace ttrace
