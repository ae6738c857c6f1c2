#pragma once
// What may differ between two runs of one layout (the manifest's optional `environment`,
// docs/bundle-format.md): software versions, devices, kernel switches, numerics environment
// variables, and per captured module the kernel it ran. A cross-version comparison names what
// differs (environment_diff.h) and may call a changed module's rounding drift.
#include <map>
#include <string>
#include <vector>

namespace ttrace {

// The kernel a module ran, as far as the capture could know it cheaply.
struct ModuleKernel {
    std::string className;    // qualified class name
    std::string sourceSha256; // of the class's source file ("" when it has none)
    std::string package;      // the distribution the class comes from ("" for the job's own)
    std::string tag;          // declared by the job (`ttrace_kernel`); "" when none

    bool operator==(const ModuleKernel&) const = default;
};

struct RunEnvironment {
    std::map<std::string, std::string> versions; // python, torch, ttrace, cuda, frameworks
    std::vector<std::string> devices;            // sorted, one per distinct device name
    std::map<std::string, std::string> backends; // switch -> its value as JSON text
    std::map<std::string, std::string> env;      // allowlisted numerics variables
    std::map<std::string, ModuleKernel> kernels; // by module name
};

} // namespace ttrace
