#pragma once
// The exit status of every front end: `ttrace` (diff, validate, localize), `ttrace-mpi` and
// `ttrace-explorer`'s headless and usage paths say the same thing with the same number
// (docs/diff-json.md, "Exit status").
namespace ttrace {

enum class ExitCode : int {
    Ok = 0,         // clean, valid, or nothing to report
    Divergent = 1,  // a divergence (or, for localize, a module that introduces one)
    BadInput = 2,   // invalid input, bundle errors, a bad option, a cancelled or failed run
    Unresolved = 3, // no divergence, but some inferred placement stayed ambiguous
};

// The number a process returns.
constexpr int exitStatus(ExitCode code) {
    return static_cast<int>(code);
}

} // namespace ttrace
