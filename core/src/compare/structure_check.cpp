#include "compare/structure_check.h"

#include <algorithm>
#include <array>

namespace ttrace {

namespace {

constexpr NameTable kNames{StructuralChange::ShapeChanged,
                           std::array<std::pair<StructuralChange, std::string_view>, 4>{{
                               {StructuralChange::None, "none"},
                               {StructuralChange::MissingInCandidate, "missing_in_candidate"},
                               {StructuralChange::ExtraInCandidate, "extra_in_candidate"},
                               {StructuralChange::ShapeChanged, "shape_changed"},
                           }}};

constexpr DiagnosticCode codeOf(StructuralChange change) {
    switch (change) {
    case StructuralChange::None: return DiagnosticCode::InternalError;
    case StructuralChange::MissingInCandidate: return DiagnosticCode::MissingInCandidate;
    case StructuralChange::ExtraInCandidate: return DiagnosticCode::ExtraInCandidate;
    case StructuralChange::ShapeChanged: return DiagnosticCode::ShapeChanged;
    }
    return DiagnosticCode::InternalError;
}

// A structural divergence's finding is named as the change is (docs/diff-json.md).
constexpr bool findingsNamedAsChanges() {
    for (const auto& [change, name] : kNames.entries()) {
        if (change != StructuralChange::None && diagnosticCodeName(codeOf(change)) != name) {
            return false;
        }
    }
    return true;
}
static_assert(findingsNamedAsChanges());

} // namespace

std::string_view structuralChangeName(StructuralChange change) {
    return kNames.name(change);
}

std::optional<StructuralChange> parseStructuralChange(std::string_view name) {
    return kNames.parse(name);
}

DiagnosticCode structuralDiagnosticCode(StructuralChange change) {
    return codeOf(change);
}

ModuleCalls moduleCallsOnBothSides(const Bundle& reference, const Bundle& candidate) {
    auto calls = [](const Bundle& bundle) {
        ModuleCalls out;
        for (const auto& [id, shards] : bundle.tensors()) {
            if (id.variant == "nominal") {
                out.emplace(id.iteration, id.microBatch, id.module);
            }
        }
        return out;
    };
    const auto ref = calls(reference);
    ModuleCalls both;
    for (const auto& call : calls(candidate)) {
        if (ref.contains(call)) {
            both.insert(call);
        }
    }
    return both;
}

namespace {

// What a module call's own code decides; parameters, their gradients and the optimizer's
// state follow the model's definition and the capture's selection instead.
bool decidedByTheCall(TensorKind kind) {
    return kind == TensorKind::ForwardInput || kind == TensorKind::ForwardOutput ||
           kind == TensorKind::OutputGrad || kind == TensorKind::InputGrad;
}

bool layoutFactor(std::int64_t a, std::int64_t b, int ranks) {
    if (a == b) {
        return true;
    }
    const auto lo = std::min(a, b);
    const auto hi = std::max(a, b);
    return lo > 0 && hi % lo == 0 && ranks % (hi / lo) == 0;
}

} // namespace

StructuralChange oneSidedChange(const TensorId& id, bool inReference, const ModuleCalls& both) {
    if (!decidedByTheCall(id.kind) || !both.contains({id.iteration, id.microBatch, id.module})) {
        return StructuralChange::None;
    }
    return inReference ? StructuralChange::MissingInCandidate : StructuralChange::ExtraInCandidate;
}

StructuralChange shapeChange(TensorKind kind, const Shape& reference, const Shape& candidate,
                             int candidateRanks) {
    if (!decidedByTheCall(kind) || reference == candidate) {
        return StructuralChange::None;
    }
    if (reference.size() == candidate.size()) {
        bool explained = true;
        for (std::size_t d = 0; d < reference.size() && explained; ++d) {
            explained = layoutFactor(reference[d], candidate[d], std::max(candidateRanks, 1));
        }
        if (explained) {
            return StructuralChange::None;
        }
    }
    return StructuralChange::ShapeChanged;
}

} // namespace ttrace
