#pragma once
// The reference as a comparison with this candidate sees it.
//
// Activation recompute (torch.utils.checkpoint, Megatron's recompute) runs a module's forward
// again during backward; the capture files that forward as `<module>@recompute` (format
// version 2). A recompute must reproduce the original forward exactly, so when only the
// candidate recomputes, its recomputed tensors are compared with the reference's original
// forward of the same call; when only the reference recomputes, its recompute records have
// nothing to be compared with and are left out.
#include "ttrace/io/bundle.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace ttrace {

inline constexpr std::string_view kRecomputeSuffix = "@recompute";
inline constexpr std::string_view kHandoffSuffix = "@handoff";

// `<module>` of `<module>@recompute`; empty for any other name.
std::string recomputedModule(std::string_view module);

// `<layer>` of `<layer>@handoff` (format version 2, additive): the activation pipeline stage
// k's last layer hands to stage k + 1, as sent (`forward_input`) and as received
// (`forward_output`), with its gradients (`input_grad` as the sender's backward got it,
// `output_grad` as the receiver computed it). Empty for any other name.
std::string handedOffModule(std::string_view module);

// The reference tensor a candidate-only record stands for: a recompute's original forward
// (`<m>@recompute` -> `<m>`), a hand-off's layer output or output gradient (`<L>@handoff`
// values -> `<L>` `forward_output`, gradients -> `<L>` `output_grad`). Nullopt for others. A
// replay of such a record is judged against the same tensor the diff compared it with.
std::optional<TensorId> mappedReference(const TensorId& id);

// What the comparison left out of the reference, for the report's notes.
struct LeftOut {
    std::size_t compiled = 0;        // activations of modules the candidate compiled away
    std::size_t stageContainers = 0; // activations of pipeline stage containers
};

// The reference as the comparison sees it: `reference` itself (null returned) when both sides
// recompute the same modules; otherwise a view of it whose index maps each candidate
// `<m>@recompute` tensor the reference lacks to the reference's shards of `<m>` (with its
// perturbed variants) and drops the reference's recompute tensors the candidate lacks. The
// manifest gains a module entry per mapped name, at the depth of the module it recomputes.
//
// Modules the candidate runs inside a compiled block (`compiled_in` in its manifest) have no
// activations there: the reference's activations of such modules that the candidate lacks
// are left out too, and counted in `leftOut->compiled`. The same for pipeline stage
// containers (`stage_slices`): each stage's copy holds other layers than the reference's
// module, so their activations are not compared (`leftOut->stageContainers`).
//
// A candidate's hand-off records `<L>@handoff` are compared with the reference's `<L>`: its
// forward input and output with `<L>`'s `forward_output`, its gradients with `<L>`'s
// `output_grad` (same index), so a hand-off that changes the value is introduced there.
std::shared_ptr<const Bundle> referenceView(const Bundle& reference, const Bundle& candidate,
                                            LeftOut* leftOut = nullptr);

} // namespace ttrace
