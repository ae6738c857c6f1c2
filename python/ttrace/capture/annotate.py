"""Hand annotations for layers that placement inference cannot understand.

    ttrace.capture.annotate(my_layer, inputs="seq", outputs="last")
    ttrace.capture.annotate(my_param, Placement.split(shape, 0, tp_rank, tp))

A module annotation gives a layout per forward input/output (one value for all, or a list by
position); a layout is a mode name (see `Layout`), a `Placement`, or a callable
``(tensor) -> Placement``. A tensor annotation (parameters, persistent buffers) is a
`Placement` used for every kind captured of that tensor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ttrace.bundle import Placement

ATTR = "_ttrace_annotation"

LayoutSpec = str | Placement | Callable[[torch.Tensor], Placement]


@dataclass(frozen=True)
class ModuleAnnotation:
    inputs: LayoutSpec | Sequence[LayoutSpec] | None = None
    outputs: LayoutSpec | Sequence[LayoutSpec] | None = None

    def pick(self, direction: str, index: int) -> LayoutSpec | None:
        spec = self.inputs if direction == "in" else self.outputs
        if spec is None or isinstance(spec, str | Placement) or callable(spec):
            return spec
        seq = list(spec)
        return seq[index] if index < len(seq) else None


def annotate(
    target: torch.nn.Module | torch.Tensor,
    placement: Placement | None = None,
    *,
    inputs: Any = None,
    outputs: Any = None,
) -> None:
    """Attach a placement (tensors) or input/output layouts (modules) to `target`."""
    if isinstance(target, torch.nn.Module):
        if placement is not None:
            raise TypeError("annotate a module with inputs=/outputs=, not a single placement")
        object.__setattr__(target, ATTR, ModuleAnnotation(inputs, outputs))
        return
    if isinstance(target, torch.Tensor):
        if not isinstance(placement, Placement):
            raise TypeError("annotate a tensor with a ttrace.bundle.Placement")
        setattr(target, ATTR, placement)
        return
    raise TypeError(f"cannot annotate a {type(target).__name__}")


def annotation_of(target: object) -> Any:
    return getattr(target, ATTR, None)
