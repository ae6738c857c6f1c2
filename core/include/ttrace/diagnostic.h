#pragma once
// A finding about a bundle: what is wrong, where (file, rank, tensor), and how bad.
// Readers never throw on bad input; they return these so every front end can show them.
#include <string>
#include <vector>

namespace ttrace {

enum class Severity { Error, Warning };

struct Diagnostic {
    Severity severity = Severity::Error;
    std::string code;     // stable machine-readable kind, e.g. "missing-rank-file"
    std::string location; // file, rank and/or tensor the finding is about
    std::string message;  // one sentence for a human

    [[nodiscard]] std::string toString() const;
};

using Diagnostics = std::vector<Diagnostic>;

[[nodiscard]] bool hasErrors(const Diagnostics& diagnostics);
Diagnostic makeError(std::string code, std::string location, std::string message);
Diagnostic makeWarning(std::string code, std::string location, std::string message);

} // namespace ttrace
