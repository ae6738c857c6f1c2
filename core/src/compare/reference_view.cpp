#include "compare/reference_view.h"

#include "compare/timeline.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

namespace ttrace {

std::string recomputedModule(std::string_view module) {
    if (module.size() <= kRecomputeSuffix.size() || !module.ends_with(kRecomputeSuffix)) {
        return {};
    }
    return std::string(module.substr(0, module.size() - kRecomputeSuffix.size()));
}

std::string handedOffModule(std::string_view module) {
    if (module.size() <= kHandoffSuffix.size() || !module.ends_with(kHandoffSuffix)) {
        return {};
    }
    return std::string(module.substr(0, module.size() - kHandoffSuffix.size()));
}

namespace {

// The reference module a recompute or hand-off record stands for; empty for others.
std::string mappedModule(std::string_view module) {
    auto base = recomputedModule(module);
    return base.empty() ? handedOffModule(module) : base;
}

// Candidate recompute tensors the reference does not hold, and reference recompute tensors
// the candidate does not hold.
struct Unmatched {
    std::set<TensorId> candidateOnly;
    std::set<TensorId> referenceOnly;
    std::set<TensorId> insideCompiled;  // reference activations of modules compiled away
    std::set<TensorId> stageContainers; // reference activations of pipeline stage containers
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

// The candidate holds this module once per pipeline stage, each copy another slice.
bool stageContainer(const Manifest& candidate, const std::string& module) {
    return candidate.stageSlices.contains(module);
}

Unmatched unmatchedRecomputes(const Bundle& reference, const Bundle& candidate) {
    Unmatched out;
    for (const auto& [id, shards] : candidate.tensors()) {
        if (mappedReference(id) && !reference.shards(id) && id.variant == "nominal") {
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
        } else if (!candidateHas && isActivation(id.kind) &&
                   stageContainer(candidate.manifest(), id.module)) {
            out.stageContainers.insert(id);
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
        const auto* base = manifest.findModule(mappedModule(name));
        out.modules.push_back({name, next++, base ? base->depth : 0,
                               base ? base->type : std::string(),
                               base ? base->compiledIn : std::string()});
    }
    return out;
}

// The manifest with an entry for every hand-off `<L>@handoff` it lacks, right after `<L>` and
// the modules inside it (the hand-off runs between `<L>` and the next layer), at `<L>`'s
// depth. Recomputes of `<L>`'s modules run during backward, after every forward: they do not
// move the hand-off past the next stage's layers. Orders are renumbered in sequence.
Manifest withHandoffModules(const Manifest& manifest, const std::set<std::string>& names) {
    Manifest out = manifest;
    auto& modules = out.modules;
    std::sort(modules.begin(), modules.end(),
              [](const auto& a, const auto& b) { return a.order < b.order; });
    for (const auto& name : names) {
        const auto layer = handedOffModule(name);
        if (layer.empty() || out.findModule(name)) {
            continue;
        }
        auto at = modules.end();
        int depth = 0;
        for (auto it = modules.begin(); it != modules.end(); ++it) {
            const bool recompute = !recomputedModule(it->name).empty();
            if (!recompute && (it->name == layer || isDescendantModule(it->name, layer))) {
                at = std::next(it);
                depth = it->name == layer ? it->depth : depth;
            }
        }
        modules.insert(at, ModuleInfo{name, 0, depth, "PipelineHandoff", {}});
    }
    for (std::size_t i = 0; i < modules.size(); ++i) {
        modules[i].order = static_cast<int>(i);
    }
    return out;
}

} // namespace

std::optional<TensorId> mappedReference(const TensorId& id) {
    TensorId out = id;
    if (auto base = recomputedModule(id.module); !base.empty()) {
        out.module = std::move(base);
        return out;
    }
    if (auto layer = handedOffModule(id.module); !layer.empty()) {
        out.module = std::move(layer);
        const bool value =
            id.kind == TensorKind::ForwardInput || id.kind == TensorKind::ForwardOutput;
        const bool grad = id.kind == TensorKind::OutputGrad || id.kind == TensorKind::InputGrad;
        if (!value && !grad) {
            return std::nullopt;
        }
        out.kind = value ? TensorKind::ForwardOutput : TensorKind::OutputGrad;
        return out;
    }
    return std::nullopt;
}

std::shared_ptr<const Bundle> referenceView(const Bundle& reference, const Bundle& candidate,
                                            LeftOut* leftOut) {
    const auto unmatched = unmatchedRecomputes(reference, candidate);
    if (leftOut) {
        const auto nominal = [](const std::set<TensorId>& ids) {
            return static_cast<std::size_t>(std::count_if(
                ids.begin(), ids.end(), [](const auto& id) { return id.variant == "nominal"; }));
        };
        *leftOut = {nominal(unmatched.insideCompiled), nominal(unmatched.stageContainers)};
    }
    if (unmatched.candidateOnly.empty() && unmatched.referenceOnly.empty() &&
        unmatched.insideCompiled.empty() && unmatched.stageContainers.empty()) {
        return nullptr;
    }
    auto index = reference.tensors();
    for (const auto* ids :
         {&unmatched.referenceOnly, &unmatched.insideCompiled, &unmatched.stageContainers}) {
        for (const auto& id : *ids) {
            index.erase(id);
        }
    }
    std::set<std::string> names;
    const auto& variants = reference.manifest().variants;
    for (const auto& id : unmatched.candidateOnly) {
        const TensorId original = *mappedReference(id);
        for (const auto& variant : variants) {
            if (const auto* shards = reference.shards(original.withVariant(variant))) {
                index.emplace(id.withVariant(variant), *shards);
                names.insert(id.module);
            }
        }
    }
    std::set<std::string> handoffs;
    for (const auto& name : names) {
        if (!handedOffModule(name).empty()) {
            handoffs.insert(name);
        }
    }
    std::erase_if(names, [](const auto& name) { return !handedOffModule(name).empty(); });
    auto manifest = withHandoffModules(
        withRecomputeModules(reference.manifest(), candidate.manifest(), names), handoffs);
    return std::make_shared<const Bundle>(reference.dir(), std::move(manifest), std::move(index));
}

} // namespace ttrace
