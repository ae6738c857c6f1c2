#pragma once
// The reference as a comparison with this candidate sees it.
//
// Activation recompute (torch.utils.checkpoint, Megatron's recompute) runs a module's forward
// again during backward; the capture files that forward as `<module>@recompute` (format
// version 2). A recompute must reproduce the original forward exactly, so when only the
// candidate recomputes, its recomputed tensors are compared with the reference's original
// forward of the same call; when only the reference recomputes, its recompute records have
// nothing to be compared with and are left out.
#include "ttrace/bundle.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ttrace {

inline constexpr std::string_view kRecomputeSuffix = "@recompute";

// `<module>` of `<module>@recompute`; empty for any other name.
std::string recomputedModule(std::string_view module);

// The reference as the comparison sees it: `reference` itself (null returned) when both sides
// recompute the same modules; otherwise a view of it whose index maps each candidate
// `<m>@recompute` tensor the reference lacks to the reference's shards of `<m>` (with its
// perturbed variants) and drops the reference's recompute tensors the candidate lacks. The
// manifest gains a module entry per mapped name, at the depth of the module it recomputes.
//
// Modules the candidate runs inside a compiled block (`compiled_in` in its manifest) have no
// activations there: the reference's activations of such modules that the candidate lacks
// are left out too, and counted in `leftOutCompiled`.
std::shared_ptr<const Bundle> referenceView(const Bundle& reference, const Bundle& candidate,
                                            std::size_t* leftOutCompiled = nullptr);

} // namespace ttrace
