#include "ttrace/io/tensor_id.h"

#include "ttrace/io/name_table.h"

#include <array>
#include <utility>

namespace ttrace {
namespace {

// The kind names of tensor paths and of the diff JSON (docs/bundle-format.md).
constexpr NameTable kKindNames{
    TensorKind::OptimizerState,
    std::array<std::pair<TensorKind, std::string_view>, kTensorKindCount>{{
        {TensorKind::ForwardInput, "forward_input"},
        {TensorKind::ForwardOutput, "forward_output"},
        {TensorKind::OutputGrad, "output_grad"},
        {TensorKind::InputGrad, "input_grad"},
        {TensorKind::Parameter, "parameter"},
        {TensorKind::ParamGrad, "param_grad"},
        {TensorKind::MainGrad, "main_grad"},
        {TensorKind::ParamAfterStep, "param_after_step"},
        {TensorKind::OptimizerState, "optimizer_state"},
    }}};

// Phase names in the JSON, and the words the reports use for them.
constexpr NameTable kPhaseNames{Phase::OptimizerStep,
                                std::array<std::pair<Phase, std::string_view>, 4>{{
                                    {Phase::Forward, "forward"},
                                    {Phase::Backward, "backward"},
                                    {Phase::GradReduction, "gradient_reduction"},
                                    {Phase::OptimizerStep, "optimizer_step"},
                                }}};
constexpr NameTable kPhaseLabels{Phase::OptimizerStep,
                                 std::array<std::pair<Phase, std::string_view>, 4>{{
                                     {Phase::Forward, "forward"},
                                     {Phase::Backward, "backward"},
                                     {Phase::GradReduction, "gradient reduction"},
                                     {Phase::OptimizerStep, "optimizer step"},
                                 }}};

} // namespace

std::optional<TensorKind> parseTensorKind(std::string_view name) {
    return kKindNames.parse(name);
}

std::string_view tensorKindName(TensorKind kind) {
    const auto name = kKindNames.name(kind);
    return name.empty() ? "unknown" : name;
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
    return kPhaseNames.name(phase);
}

std::string_view phaseLabel(Phase phase) {
    return kPhaseLabels.name(phase);
}

std::optional<Phase> parsePhase(std::string_view name) {
    return kPhaseNames.parse(name);
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
