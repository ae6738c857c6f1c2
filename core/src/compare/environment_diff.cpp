#include "ttrace/compare/environment_diff.h"

#include "compare/timeline.h"

#include <algorithm>

namespace ttrace {
namespace {

const std::string kAbsent = "absent";

// Versions that cannot change what a kernel computes: the interpreter runs no tensor math, and
// ttrace only records. Every other version (torch, CUDA, cuDNN, a framework) may.
bool reportOnlyVersion(const std::string& name) {
    return name == "python" || name == "ttrace";
}

// Switches and variables that change only how work is scheduled or split over CPU threads:
// that reorders reductions, which is the round-off the tolerance already covers (as another
// layout does), not another kernel. A single-process reference and a torchrun candidate
// differ in them routinely; they must not open the door to drift.
bool reportOnlySetting(const std::string& name) {
    return name == "intra_op_threads" || name == "OMP_NUM_THREADS" || name == "MKL_NUM_THREADS" ||
           name == "PYTHONHASHSEED" || name == "CUDA_LAUNCH_BLOCKING" ||
           name == "CUDA_DEVICE_MAX_CONNECTIONS";
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) {
        out += (out.empty() ? "" : ", ") + item;
    }
    return out.empty() ? kAbsent : out;
}

void compareMaps(const std::map<std::string, std::string>& a,
                 const std::map<std::string, std::string>& b, const std::string& prefix,
                 bool versions, std::vector<EnvironmentChange>& out) {
    std::set<std::string> names;
    for (const auto& [k, v] : a) {
        names.insert(k);
    }
    for (const auto& [k, v] : b) {
        names.insert(k);
    }
    for (const auto& name : names) {
        const auto ia = a.find(name);
        const auto ib = b.find(name);
        const std::string va = ia == a.end() ? kAbsent : ia->second;
        const std::string vb = ib == b.end() ? kAbsent : ib->second;
        if (va != vb) {
            const bool onlyReport = versions ? reportOnlyVersion(name) : reportOnlySetting(name);
            out.push_back({versions ? name + " version" : prefix + " " + name, "", va, vb,
                           onlyReport ? ChangeScope::Report : ChangeScope::Run});
        }
    }
}

std::string versionOf(const RunEnvironment& e, const std::string& package) {
    const auto it = e.versions.find(package);
    return it == e.versions.end() ? kAbsent : it->second;
}

void compareKernels(const RunEnvironment& a, const RunEnvironment& b,
                    std::vector<EnvironmentChange>& out) {
    for (const auto& [module, ka] : a.kernels) {
        const auto it = b.kernels.find(module);
        if (it == b.kernels.end()) {
            continue; // module mapping is the comparison's business, not the environment's
        }
        const auto& kb = it->second;
        // A structured binding cannot be captured before C++20's P1091 (clang 15 and older).
        const std::string& name = module;
        auto add = [&](const std::string& field, const std::string& va, const std::string& vb) {
            out.push_back({field, name, va.empty() ? kAbsent : va, vb.empty() ? kAbsent : vb,
                           ChangeScope::Module});
        };
        if (ka.className != kb.className) {
            add("kernel class", ka.className, kb.className);
        } else if (ka.sourceSha256 != kb.sourceSha256) {
            add("class source", ka.sourceSha256.substr(0, 12), kb.sourceSha256.substr(0, 12));
        }
        if (ka.tag != kb.tag) {
            add("kernel tag", ka.tag, kb.tag);
        }
        // A framework upgrade changes the kernels of the modules its classes define.
        if (!ka.package.empty() && versionOf(a, ka.package) != versionOf(b, kb.package)) {
            add(ka.package + " version", versionOf(a, ka.package), versionOf(b, kb.package));
        }
    }
}

} // namespace

std::string EnvironmentChange::toString() const {
    return (module.empty() ? "" : module + " ") + field + ": " + reference + " (reference) vs " +
           candidate + " (candidate)";
}

bool EnvironmentDiff::runWide() const {
    return std::any_of(changes.begin(), changes.end(),
                       [](const EnvironmentChange& c) { return c.scope == ChangeScope::Run; });
}

bool EnvironmentDiff::mayChangeKernels() const {
    return std::any_of(changes.begin(), changes.end(),
                       [](const EnvironmentChange& c) { return c.scope != ChangeScope::Report; });
}

std::set<std::string> EnvironmentDiff::changedModules() const {
    std::set<std::string> out;
    for (const auto& c : changes) {
        if (c.scope == ChangeScope::Module) {
            out.insert(c.module);
        }
    }
    return out;
}

bool EnvironmentDiff::allowsDrift(const std::string& module) const {
    if (runWide()) {
        return true;
    }
    return std::any_of(changes.begin(), changes.end(), [&](const EnvironmentChange& c) {
        return c.scope == ChangeScope::Module &&
               (c.module == module || isDescendantModule(c.module, module));
    });
}

EnvironmentDiff environmentDiff(const Manifest& reference, const Manifest& candidate) {
    EnvironmentDiff d;
    d.referenceRecorded = reference.environment.has_value();
    d.candidateRecorded = candidate.environment.has_value();
    if (!d.referenceRecorded || !d.candidateRecorded) {
        return d; // nothing to say what differs: no drift anywhere
    }
    const auto& a = *reference.environment;
    const auto& b = *candidate.environment;
    compareMaps(a.versions, b.versions, "", true, d.changes);
    if (a.devices != b.devices) {
        d.changes.push_back({"device", "", joined(a.devices), joined(b.devices), ChangeScope::Run});
    }
    compareMaps(a.backends, b.backends, "backend", false, d.changes);
    compareMaps(a.env, b.env, "environment variable", false, d.changes);
    compareKernels(a, b, d.changes);
    return d;
}

} // namespace ttrace
