#pragma once
// Identity of one logical tensor in a trace: the same id in reference and candidate bundles
// names the same quantity, which is what makes them comparable.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ttrace {

enum class TensorKind {
    ForwardInput,
    ForwardOutput,
    OutputGrad,
    InputGrad,
    Parameter,
    ParamGrad,
    MainGrad,
    ParamAfterStep,
    OptimizerState,
};
inline constexpr int kTensorKindCount = 9;

std::optional<TensorKind> parseTensorKind(std::string_view name);
std::string_view tensorKindName(TensorKind kind);
// Gradients flow from the loss backwards; their first divergence is searched in reverse order.
bool isBackwardKind(TensorKind kind);

// The phases of one training iteration, in the order they run. Every finding is placed on this
// timeline: (iteration, phase, micro-batch, execution order within the phase).
enum class Phase {
    Forward,       // forward_input, forward_output, parameter (as the forward reads it)
    Backward,      // output_grad, input_grad, param_grad
    GradReduction, // main_grad: gradients after the data/model-parallel reductions
    OptimizerStep, // param_after_step, optimizer_state
};
Phase phaseOf(TensorKind kind);
// "forward", "backward", "gradient_reduction", "optimizer_step".
std::string_view phaseName(Phase phase);
// "forward", "backward", "gradient reduction", "optimizer step".
std::string_view phaseLabel(Phase phase);
std::optional<Phase> parsePhase(std::string_view name);

struct TensorId {
    std::string variant = "nominal";
    std::int64_t iteration = 0;
    std::int64_t microBatch = 0; // -1: once per iteration ("mb_all")
    std::string module;
    TensorKind kind = TensorKind::ForwardOutput;
    std::string index = "0";

    // "/<variant>/iter_<I>/mb_<M>/<module>/<kind>/<index>", the dataset path in a rank file.
    [[nodiscard]] std::string path() const;
    // Same tensor in another variant (e.g. the perturbed reference of a nominal id).
    [[nodiscard]] TensorId withVariant(std::string otherVariant) const;
    // Human-readable label without the variant, e.g. "iter 0 mb 1 layers.0.mlp forward_output[0]".
    [[nodiscard]] std::string label() const;

    auto operator<=>(const TensorId&) const = default;
    bool operator==(const TensorId&) const = default;
};

} // namespace ttrace
