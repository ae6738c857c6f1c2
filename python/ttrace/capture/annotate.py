"""Hand annotations for layers that placement inference cannot understand.

    ttrace.capture.annotate(my_layer, inputs="seq", outputs="last")
    ttrace.capture.annotate(my_param, Placement.split(shape, 0, tp_rank, tp))

A module annotation gives a layout per forward input/output (one value for all, or a list by
position); a layout is a mode name (see `Layout`), a `Placement`, or a callable
``(tensor) -> Placement``. A tensor annotation (parameters, persistent buffers) is a
`Placement` used for every kind captured of that tensor.

A parameter that is one logical tensor held by several pipeline stages (a tied embedding's
copy on the last stage) is captured under the name of the tensor it copies:

    ttrace.capture.annotate(head_weight, alias="embedding.weight", partial_over="pp")

`alias` is the canonical `<module>.<parameter>` name of the reference tensor (also used by
`seeded_init`, so the copy starts identical); `partial_over="pp"` says that the copies on the
first and last pipeline stage each hold a partial sum of the gradient (before the program's
embedding-group all-reduce) and replicas of everything else. Megatron-LM's
`shared_embedding = True` attribute means the same as `partial_over="pp"`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ttrace.bundle import Placement

ATTR = "_ttrace_annotation"
PARAM_ATTR = "_ttrace_param"
PARTIAL_OVER = ("pp",)

LayoutSpec = str | Placement | Callable[[torch.Tensor], Placement]


@dataclass(frozen=True)
class ModuleAnnotation:
    inputs: LayoutSpec | Sequence[LayoutSpec] | None = None
    outputs: LayoutSpec | Sequence[LayoutSpec] | None = None

    def pick(self, direction: str, index: int | str) -> LayoutSpec | None:
        """The spec of input/output `index`: a position, or a keyword (`{"hidden_states":
        "seq"}` annotates a keyword input)."""
        spec = self.inputs if direction == "in" else self.outputs
        if spec is None or isinstance(spec, str | Placement) or callable(spec):
            return spec
        if isinstance(spec, dict):
            return spec.get(index, spec.get(str(index)))
        seq = list(spec)
        if isinstance(index, str):
            if not index.isdigit():
                return None
            index = int(index)
        return seq[index] if index < len(seq) else None


@dataclass(frozen=True)
class ParamAnnotation:
    # canonical "<module>.<parameter>" name to capture (and seed) this tensor under
    alias: str | None = None
    # "pp": a copy tied across the first and last pipeline stage
    partial_over: str | None = None

    def module_and_param(self, root_name: str) -> tuple[str, str] | None:
        if self.alias is None:
            return None
        module, _, pname = self.alias.rpartition(".")
        return (module or root_name), pname


def annotate(
    target: torch.nn.Module | torch.Tensor,
    placement: Placement | None = None,
    *,
    inputs: Any = None,
    outputs: Any = None,
    alias: str | None = None,
    partial_over: str | None = None,
) -> None:
    """Attach a placement or an alias (tensors) or input/output layouts (modules)."""
    if isinstance(target, torch.nn.Module):
        if placement is not None or alias is not None or partial_over is not None:
            raise TypeError("annotate a module with inputs=/outputs= only")
        object.__setattr__(target, ATTR, ModuleAnnotation(inputs, outputs))
        return
    if isinstance(target, torch.Tensor):
        if alias is not None or partial_over is not None:
            if partial_over is not None and partial_over not in PARTIAL_OVER:
                raise ValueError(f"partial_over must be one of {PARTIAL_OVER}")
            if alias is not None and (not alias or alias.endswith(".")):
                raise ValueError(f"alias {alias!r} is not a '<module>.<parameter>' name")
            setattr(target, PARAM_ATTR, ParamAnnotation(alias, partial_over))
            if placement is None:
                return
        if not isinstance(placement, Placement):
            raise TypeError("annotate a tensor with a ttrace.bundle.Placement")
        setattr(target, ATTR, placement)
        return
    raise TypeError(f"cannot annotate a {type(target).__name__}")


def annotation_of(target: object) -> Any:
    return getattr(target, ATTR, None)


def param_annotation_of(target: object) -> ParamAnnotation | None:
    return getattr(target, PARAM_ATTR, None)


def tied_across_pp(param: object) -> bool:
    """A parameter copy tied across the first and last pipeline stage (Megatron-LM's
    `shared_embedding`, or `annotate(..., partial_over="pp")`)."""
    ann = param_annotation_of(param)
    return bool(getattr(param, "shared_embedding", False)) or (
        ann is not None and ann.partial_over == "pp"
    )
