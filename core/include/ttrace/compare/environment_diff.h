#pragma once
// What differs between the environments two manifests recorded (run_environment.h), and
// where that lets the verdict call a divergence drift (docs/cross-version.md): everywhere when
// something every kernel depends on changed (torch, CUDA, cuDNN, the device, a kernel switch,
// a numerics environment variable), at a module when its own kernel changed (class source,
// declared tag, the version of the framework its class comes from), and nowhere else.
#include "ttrace/io/manifest.h"

#include <set>
#include <string>
#include <vector>

namespace ttrace {

enum class ChangeScope {
    Report, // named in the report only: cannot change a kernel (python, ttrace versions)
    Run,    // may change every module's kernels
    Module, // changes one module's kernel
};

struct EnvironmentChange {
    std::string field;  // "torch version", "device", "backend cuda.flash_sdp", "kernel tag"
    std::string module; // the module whose kernel changed (scope Module); "" otherwise
    std::string reference, candidate; // "absent" when only one side records it
    ChangeScope scope = ChangeScope::Report;

    bool operator==(const EnvironmentChange&) const = default;
    // One line: "torch version: 2.13.0 (reference) vs 2.14.0 (candidate)".
    [[nodiscard]] std::string toString() const;
};

struct EnvironmentDiff {
    // Whether each side recorded an environment (older bundles did not).
    bool referenceRecorded = false, candidateRecorded = false;
    std::vector<EnvironmentChange> changes;

    [[nodiscard]] bool runWide() const;
    // Whether any change may change a kernel (run-wide or a module's): only then may anything
    // drift, and only then is the difference worth a warning; thread counts and the like
    // (scope Report) are information.
    [[nodiscard]] bool mayChangeKernels() const;
    // Modules with a change of their own kernel.
    [[nodiscard]] std::set<std::string> changedModules() const;
    // May `module` drift: a run-wide change, or its own kernel or a submodule's changed (a
    // module runs its submodules' kernels).
    [[nodiscard]] bool allowsDrift(const std::string& module) const;
};

EnvironmentDiff environmentDiff(const Manifest& reference, const Manifest& candidate);

} // namespace ttrace
