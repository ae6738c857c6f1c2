#include "ttrace/tensor_id.h"

#include <array>
#include <utility>

namespace ttrace {
namespace {

constexpr std::array<std::pair<TensorKind, std::string_view>, kTensorKindCount> kKinds{{
    {TensorKind::ForwardInput, "forward_input"},
    {TensorKind::ForwardOutput, "forward_output"},
    {TensorKind::OutputGrad, "output_grad"},
    {TensorKind::InputGrad, "input_grad"},
    {TensorKind::Parameter, "parameter"},
    {TensorKind::ParamGrad, "param_grad"},
    {TensorKind::MainGrad, "main_grad"},
    {TensorKind::ParamAfterStep, "param_after_step"},
    {TensorKind::OptimizerState, "optimizer_state"},
}};

} // namespace

std::optional<TensorKind> parseTensorKind(std::string_view name) {
    for (const auto& [kind, text] : kKinds) {
        if (text == name) {
            return kind;
        }
    }
    return std::nullopt;
}

std::string_view tensorKindName(TensorKind kind) {
    for (const auto& [k, text] : kKinds) {
        if (k == kind) {
            return text;
        }
    }
    return "unknown";
}

bool isBackwardKind(TensorKind kind) {
    return kind == TensorKind::OutputGrad || kind == TensorKind::InputGrad ||
           kind == TensorKind::ParamGrad || kind == TensorKind::MainGrad;
}

Phase phaseOf(TensorKind kind) {
    switch (kind) {
    case TensorKind::ForwardInput:
    case TensorKind::ForwardOutput:
    case TensorKind::Parameter: return Phase::Forward;
    case TensorKind::OutputGrad:
    case TensorKind::InputGrad:
    case TensorKind::ParamGrad: return Phase::Backward;
    case TensorKind::MainGrad: return Phase::GradReduction;
    case TensorKind::ParamAfterStep:
    case TensorKind::OptimizerState: return Phase::OptimizerStep;
    }
    return Phase::Forward;
}

std::string_view phaseName(Phase phase) {
    switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::GradReduction: return "gradient_reduction";
    case Phase::OptimizerStep: return "optimizer_step";
    }
    return "unknown";
}

std::string_view phaseLabel(Phase phase) {
    switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::GradReduction: return "gradient reduction";
    case Phase::OptimizerStep: return "optimizer step";
    }
    return "unknown";
}

std::optional<Phase> parsePhase(std::string_view name) {
    for (const Phase p :
         {Phase::Forward, Phase::Backward, Phase::GradReduction, Phase::OptimizerStep}) {
        if (phaseName(p) == name) {
            return p;
        }
    }
    return std::nullopt;
}

std::string TensorId::path() const {
    std::string mb = microBatch < 0 ? std::string("all") : std::to_string(microBatch);
    return "/" + variant + "/iter_" + std::to_string(iteration) + "/mb_" + mb + "/" + module + "/" +
           std::string(tensorKindName(kind)) + "/" + index;
}

TensorId TensorId::withVariant(std::string otherVariant) const {
    TensorId copy = *this;
    copy.variant = std::move(otherVariant);
    return copy;
}

std::string TensorId::label() const {
    std::string mb = microBatch < 0 ? std::string("all") : std::to_string(microBatch);
    return "iter " + std::to_string(iteration) + " mb " + mb + " " + module + " " +
           std::string(tensorKindName(kind)) + "[" + index + "]";
}

} // namespace ttrace
