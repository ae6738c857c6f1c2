#include "compare/reference_view.h"

#include <algorithm>
#include <set>
#include <vector>

namespace ttrace {

std::string recomputedModule(std::string_view module) {
    if (module.size() <= kRecomputeSuffix.size() || !module.ends_with(kRecomputeSuffix)) {
        return {};
    }
    return std::string(module.substr(0, module.size() - kRecomputeSuffix.size()));
}

namespace {

// Candidate recompute tensors the reference does not hold, and reference recompute tensors
// the candidate does not hold.
struct Unmatched {
    std::set<TensorId> candidateOnly;
    std::set<TensorId> referenceOnly;
    std::set<TensorId> insideCompiled; // reference activations of modules compiled away
};

bool isActivation(TensorKind kind) {
    return kind == TensorKind::ForwardInput || kind == TensorKind::ForwardOutput ||
           kind == TensorKind::OutputGrad || kind == TensorKind::InputGrad;
}

// The candidate runs this module inside a compiled block (any call of it).
bool compiledAway(const Manifest& candidate, const std::string& module) {
    const auto at = module.find('@');
    const auto* info = candidate.findModule(module.substr(0, at));
    return info && !info->compiledIn.empty();
}

Unmatched unmatchedRecomputes(const Bundle& reference, const Bundle& candidate) {
    Unmatched out;
    for (const auto& [id, shards] : candidate.tensors()) {
        if (!recomputedModule(id.module).empty() && !reference.shards(id) &&
            id.variant == "nominal") {
            out.candidateOnly.insert(id);
        }
    }
    for (const auto& [id, shards] : reference.tensors()) {
        const bool candidateHas = candidate.shards(id.withVariant("nominal")) != nullptr;
        if (!candidateHas && !recomputedModule(id.module).empty()) {
            out.referenceOnly.insert(id);
        } else if (!candidateHas && isActivation(id.kind) &&
                   compiledAway(candidate.manifest(), id.module)) {
            out.insideCompiled.insert(id);
        }
    }
    return out;
}

// The manifest with an entry for every recompute module name it lacks, after its modules
// (recompute runs during backward) in the candidate's order of recomputation, at the depth of
// the module recomputed.
Manifest withRecomputeModules(const Manifest& manifest, const Manifest& candidate,
                              const std::set<std::string>& names) {
    Manifest out = manifest;
    int next = 0;
    for (const auto& m : out.modules) {
        next = std::max(next, m.order + 1);
    }
    std::vector<std::string> ordered;
    for (const auto& m : candidate.modules) {
        if (names.contains(m.name)) {
            ordered.push_back(m.name);
        }
    }
    for (const auto& name : names) {
        if (!candidate.findModule(name)) {
            ordered.push_back(name);
        }
    }
    for (const auto& name : ordered) {
        if (out.findModule(name)) {
            continue;
        }
        const auto* base = manifest.findModule(recomputedModule(name));
        out.modules.push_back({name, next++, base ? base->depth : 0,
                               base ? base->type : std::string(),
                               base ? base->compiledIn : std::string()});
    }
    return out;
}

} // namespace

std::shared_ptr<const Bundle> referenceView(const Bundle& reference, const Bundle& candidate,
                                            std::size_t* leftOutCompiled) {
    const auto unmatched = unmatchedRecomputes(reference, candidate);
    if (leftOutCompiled) {
        *leftOutCompiled = 0;
        for (const auto& id : unmatched.insideCompiled) {
            *leftOutCompiled += id.variant == "nominal" ? 1 : 0;
        }
    }
    if (unmatched.candidateOnly.empty() && unmatched.referenceOnly.empty() &&
        unmatched.insideCompiled.empty()) {
        return nullptr;
    }
    auto index = reference.tensors();
    for (const auto* ids : {&unmatched.referenceOnly, &unmatched.insideCompiled}) {
        for (const auto& id : *ids) {
            index.erase(id);
        }
    }
    std::set<std::string> names;
    const auto& variants = reference.manifest().variants;
    for (const auto& id : unmatched.candidateOnly) {
        TensorId original = id;
        original.module = recomputedModule(id.module);
        for (const auto& variant : variants) {
            if (const auto* shards = reference.shards(original.withVariant(variant))) {
                index.emplace(id.withVariant(variant), *shards);
                names.insert(id.module);
            }
        }
    }
    auto manifest = withRecomputeModules(reference.manifest(), candidate.manifest(), names);
    return std::make_shared<const Bundle>(reference.dir(), std::move(manifest), std::move(index));
}

} // namespace ttrace
