#include "ttrace/compare/reduction_paths.h"

#include <algorithm>
#include <set>

namespace ttrace {
namespace {

double product(const Shape& s, std::size_t from) {
    double p = 1.0;
    for (std::size_t i = from; i < s.size(); ++i) {
        p *= static_cast<double>(s[i]);
    }
    return p;
}

// What the reference holds of one module at its first captured step.
struct ModuleShapes {
    std::map<std::string, Shape> parameters; // by parameter name
    std::optional<Shape> input;              // forward_input[0]
    int partialSums = 0;                     // the candidate's `sum` shards of forward_output[0]
};

bool firstStep(const TensorId& id, std::int64_t first) {
    return id.variant == "nominal" && id.iteration == first;
}

std::int64_t firstIteration(const Manifest& m) {
    return m.iterations.empty() ? 0 : *std::min_element(m.iterations.begin(), m.iterations.end());
}

std::map<std::string, ModuleShapes> readShapes(const Bundle& reference, const Bundle& candidate) {
    const std::int64_t first = firstIteration(reference.manifest());
    std::map<std::string, ModuleShapes> out;
    for (const auto& [id, shards] : reference.tensors()) {
        if (shards.empty() || !firstStep(id, first)) {
            continue;
        }
        auto& m = out[id.module];
        const Shape& shape = shards.front().placement.globalShape;
        if (id.kind == TensorKind::Parameter) {
            m.parameters.emplace(id.index, shape);
        } else if (id.kind == TensorKind::ForwardInput && id.index == "0" && !m.input) {
            m.input = shape;
        }
    }
    for (const auto& [id, shards] : candidate.tensors()) {
        if (id.kind != TensorKind::ForwardOutput || id.index != "0" || !firstStep(id, first)) {
            continue;
        }
        const auto sums = std::count_if(shards.begin(), shards.end(), [](const ShardRef& s) {
            return s.placement.combine == Combine::Sum;
        });
        auto& m = out[id.module];
        m.partialSums = std::max(m.partialSums, static_cast<int>(sums));
    }
    return out;
}

bool isBias(const std::string& name) {
    return name == "bias" || name.ends_with(".bias") || name.ends_with("_bias");
}

// One leaf's reductions from its shapes. A weight [out, in...] reduces over in... forward and
// over out backward; a 1-D weight that is not a bias (a norm's) over its length both ways; an
// embedding table is a lookup (exact both ways). A module without parameters (softmax, an
// attention kernel, a loss) is taken to reduce along its input's last dimension and along its
// longest one, the reductions such ops make (features; sequence).
ReductionPaths::Leaf leafFrom(const ModuleInfo& info, const ModuleShapes& s) {
    ReductionPaths::Leaf leaf;
    leaf.name = info.name;
    leaf.order = info.order;
    if (s.input && !s.input->empty()) {
        leaf.tokens = std::max(1.0, product(*s.input, 0) / static_cast<double>(s.input->back()));
    }
    leaf.roundings = 1.0 + s.partialSums;
    for (const auto& [name, shape] : s.parameters) {
        leaf.parameters.push_back(name);
    }
    if (info.type.find("Embedding") != std::string::npos) {
        // Its input is token ids: every one is a row its weight gradient may sum over.
        leaf.tokens = s.input ? std::max(1.0, product(*s.input, 0)) : 1.0;
        return leaf;
    }
    for (const auto& [name, shape] : s.parameters) {
        if (shape.size() >= 2) {
            leaf.forward += product(shape, 1);
            leaf.backward += static_cast<double>(shape.front());
        } else if (shape.size() == 1 && !isBias(name)) {
            leaf.forward += static_cast<double>(shape.front());
            leaf.backward += static_cast<double>(shape.front());
        }
    }
    if (s.parameters.empty() && s.input && !s.input->empty()) {
        const double longest =
            static_cast<double>(*std::max_element(s.input->begin(), s.input->end()));
        leaf.forward = leaf.backward = static_cast<double>(s.input->back()) + longest;
    }
    return leaf;
}

bool isLeaf(const std::string& name, const std::set<std::string>& names) {
    const auto it = names.upper_bound(name + ".");
    return it == names.end() || !it->starts_with(name + ".");
}

} // namespace

ReductionPaths ReductionPaths::build(const Bundle& reference, const Bundle& candidate) {
    ReductionPaths p;
    const auto& manifest = reference.manifest();
    std::set<std::string> names;
    for (const auto& m : manifest.modules) {
        names.insert(m.name);
    }
    const auto shapes = readShapes(reference, candidate);
    for (const auto& m : manifest.modules) {
        if (!isLeaf(m.name, names)) {
            continue;
        }
        const auto it = shapes.find(m.name);
        p.leaves_.push_back(leafFrom(m, it == shapes.end() ? ModuleShapes{} : it->second));
        p.forwardTotal_ += p.leaves_.back().forward;
        p.forwardRoundings_ += p.leaves_.back().roundings;
    }
    std::stable_sort(p.leaves_.begin(), p.leaves_.end(),
                     [](const Leaf& a, const Leaf& b) { return a.order < b.order; });
    p.microBatches_ = std::max(1, manifest.microBatches);
    p.firstIteration_ = firstIteration(manifest);
    const auto& par = candidate.manifest().parallel;
    for (const char* dim : {"dp", "cp"}) {
        if (const auto it = par.find(dim); it != par.end()) {
            p.gradientReducers_ *= std::max(1, it->second);
        }
    }
    return p;
}

std::vector<std::size_t> ReductionPaths::leavesOf(const std::string& name) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < leaves_.size(); ++i) {
        if (leaves_[i].name == name || leaves_[i].name.starts_with(name + ".")) {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<std::string> ReductionPaths::parameterLeaves(const TensorId& id) const {
    const auto own = leavesOf(id.module);
    std::vector<std::string> out;
    if (own.empty()) {
        return out;
    }
    std::size_t end = leaves_.size();
    if (id.kind == TensorKind::ForwardInput) {
        end = own.front();
    } else if (id.kind == TensorKind::ForwardOutput) {
        end = own.back() + 1;
    }
    for (std::size_t i = 0; i < end; ++i) {
        if (!leaves_[i].parameters.empty()) {
            out.push_back(leaves_[i].name);
        }
    }
    return out;
}

const std::vector<std::string>& ReductionPaths::parametersOf(const std::string& leaf) const {
    static const std::vector<std::string> none;
    for (const auto& l : leaves_) {
        if (l.name == leaf) {
            return l.parameters;
        }
    }
    return none;
}

Provisional ReductionPaths::provisionalOf(const TensorId& id) const {
    const bool stepOutput = id.kind == TensorKind::ParamAfterStep ||
                            id.kind == TensorKind::OptimizerState ||
                            (id.kind == TensorKind::Parameter && id.iteration > firstIteration_);
    if (stepOutput) {
        return Provisional::OptimizerStep;
    }
    return id.iteration > firstIteration_ ? Provisional::CarriedState : Provisional::None;
}

std::optional<ReductionPath> ReductionPaths::pathOf(const TensorId& id) const {
    const auto own = leavesOf(id.module);
    if (own.empty()) {
        return std::nullopt;
    }
    if (id.kind == TensorKind::Parameter && id.iteration == firstIteration_) {
        return ReductionPath{}; // the seeded initial value: no round-off at all
    }
    const std::size_t firstLeaf = own.front(), lastLeaf = own.back();
    ReductionPath path;
    auto addForward = [&](std::size_t end) { // leaves [0, end)
        for (std::size_t i = 0; i < end; ++i) {
            path.reductions += leaves_[i].forward;
            path.roundings += leaves_[i].roundings;
        }
    };
    auto addBackward = [&](std::size_t from) { // the whole forward, then leaves [from, end)
        path.reductions += forwardTotal_;
        path.roundings += forwardRoundings_;
        for (std::size_t i = from; i < leaves_.size(); ++i) {
            path.reductions += leaves_[i].backward;
            path.roundings += 1.0;
        }
    };
    double tokens = 1.0;
    for (const auto i : own) {
        tokens = std::max(tokens, leaves_[i].tokens);
    }
    switch (id.kind) {
    case TensorKind::ForwardInput: addForward(firstLeaf); break;
    case TensorKind::ForwardOutput: addForward(lastLeaf + 1); break;
    case TensorKind::OutputGrad: addBackward(lastLeaf + 1); break;
    case TensorKind::InputGrad: addBackward(firstLeaf); break;
    case TensorKind::ParamGrad:
        addBackward(firstLeaf);
        path.reductions += tokens;
        path.ownReductions = tokens;
        break;
    case TensorKind::Parameter: // after a step: what the step wrote
    case TensorKind::MainGrad:
    case TensorKind::ParamAfterStep:
    case TensorKind::OptimizerState:
        // Derived from the reduced gradient: every micro-batch's tokens, summed over ranks.
        addBackward(firstLeaf);
        path.reductions += tokens * microBatches_;
        path.roundings += gradientReducers_;
        if (id.kind == TensorKind::MainGrad) {
            path.ownReductions = tokens * microBatches_;
            path.ownPartials = gradientReducers_ > 1.0 ? gradientReducers_ : 0.0;
        }
        break;
    }
    return path;
}

} // namespace ttrace
