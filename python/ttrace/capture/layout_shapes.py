"""What the run's shapes tell about layouts when nothing else decides.

Facts gathered as the run goes: the local batch size and the sequence length of the token
ids entering the model (the first 2-d integer tensor a root receives, `[b, s]`), and the
full widths of tensor-parallel weights (DTensors, Megatron-style split weights). A local
tensor whose sequence dimension is the ids' length / tp is split on the sequence; one whose
last dimension is a known full width / tp is split on the last dimension; both at once is
reported as ambiguous rather than guessed. A batch dimension of size 1 while the local
batch is larger is a broadcast (rotary tables, masks), replicated over dp.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import nn

from .dtensor_placement import is_dtensor
from .layout import Layout
from .layout_note import LayoutNote, shape_text
from .naming import ModuleNames
from .parallel_info import ParallelInfo


def _fsdp_params(modules: Iterable[nn.Module]) -> set[int]:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return set()
    out: set[int] = set()
    for m in modules:
        if isinstance(m, FSDPModule):
            out.update(id(p) for p in m.parameters())
    return out


class ShapeFacts:
    def __init__(self, names: ModuleNames, info: ParallelInfo) -> None:
        self.names = names
        self.info = info
        self.data_parallel_params = _fsdp_params(names.names)
        self.batch_local: int | None = None
        self.seq_len: int | None = None
        self.widths: set[int] = set()
        for m in names.names:
            for p in m.parameters(recurse=False):
                if id(p) in self.data_parallel_params:
                    continue
                if is_dtensor(p) or getattr(p, "tensor_model_parallel", False):
                    full = tuple(p.shape)
                    if getattr(p, "tensor_model_parallel", False) and info.tp > 1:
                        pd = int(getattr(p, "partition_dim", 0))
                        full = tuple(n * info.tp if d == pd else n for d, n in enumerate(full))
                    self.widths.update(full)

    def has_tp_params(self, module: nn.Module) -> bool:
        """Whether any parameter under `module` is split over tensor parallelism."""
        for p in module.parameters():
            if id(p) in self.data_parallel_params:
                continue
            if getattr(p, "tensor_model_parallel", False):
                return True
            if is_dtensor(p) and any(type(x).__name__ != "Replicate" for x in p.placements):
                return True
        return False

    def observe_root(self, args: tuple, kwargs: dict[str, Any]) -> None:
        """Record the ids' batch size and length from a root's first forward: a 2-d integer
        tensor among its arguments, or one level inside them (a batch dict handed whole, as
        Lightning's `training_step(batch, batch_idx)` receives it)."""
        if self.batch_local is not None:
            return
        values = [*args, *kwargs.values()]
        for value in [*values, *(v for x in values for v in _members(x))]:
            if (
                isinstance(value, torch.Tensor)
                and value.dim() == 2
                and not value.is_floating_point()
                and not is_dtensor(value)
            ):
                self.batch_local, self.seq_len = int(value.shape[0]), int(value.shape[1])
                return

    def broadcast_batch(self, size: int) -> bool:
        return size == 1 and self.batch_local is not None and self.batch_local > 1

    def by_shape(
        self,
        module: nn.Module,
        direction: str,
        index: int | str,
        shape: tuple,
        order: str,
        modes: tuple[str, ...] = ("seq", "last"),
    ) -> tuple[Layout, LayoutNote | None]:
        """The layout a tensor nothing else placed gets, with a note saying how. `modes`:
        the splits still possible (what the module's declared inputs allow); when "last"
        is excluded that way, a tensor matching none of them is known to be a replica."""
        tp = self.info.tp
        if tp == 1 or len(shape) == 0:
            return Layout("replica"), None
        roles = Layout("replica", order).roles(len(shape))
        candidates: list[tuple[Layout, str]] = []
        if "s" in roles and self.seq_len and "seq" in modes:
            n = shape[roles.index("s")]
            if n * tp == self.seq_len:
                candidates.append((Layout("seq"), f"sequence {n} = ids length {self.seq_len}/tp"))
        last = shape[-1]
        guess_last = "last" in modes and len(shape) >= 2
        if guess_last and last * tp in self.widths and last not in self.widths:
            candidates.append((Layout("last"), f"last dim {last} = weight width {last * tp}/tp"))
        local = shape_text(shape)
        where = f"{direction}put {index} of {self.names.name(module)}"
        if len(candidates) == 1:
            layout, why = candidates[0]
            note = f"inferred {layout.mode} over tp from the shape ({why}); local {local}"
            return layout, LayoutNote(note, self.hint(module, direction, index, layout.mode))
        if len(candidates) > 1:
            modes = " or ".join(c.mode for c, _ in candidates)
            note = (
                f"ambiguous: {where} could be split as {modes} over tp "
                f"({'; '.join(w for _, w in candidates)}); taken as replica; local {local}"
            )
            hint = self.hint(module, direction, index, candidates[0][0].mode)
            return Layout("replica"), LayoutNote(note, hint)
        if "last" not in modes:
            return Layout("replica"), None
        note = (
            "inferred replica over tp: no parallel attribute, no DTensor, no tensor-parallel "
            f"style; local {local}"
        )
        return Layout("replica"), LayoutNote(note, self.hint(module, direction, index, "last"))

    def hint(self, module: nn.Module, direction: str, index: int | str, mode: str) -> str:
        path = self.names.paths.get(module, self.names.name(module))
        side = "inputs" if direction == "in" else "outputs"
        if str(index) in ("0",):
            value = f'"{mode}"'
        elif str(index).isdigit():
            value = "[" + ", ".join(["None"] * int(index) + [f'"{mode}"']) + "]"
        else:
            value = f'{{"{index}": "{mode}"}}'
        return f'ttc.annotate(model.get_submodule("{path}"), {side}={value})'


def _members(value: Any) -> list[Any]:
    """The items of a dict, list or tuple argument (a batch handed whole); else none."""
    if isinstance(value, Mapping):
        return list(value.values())
    return list(value) if isinstance(value, list | tuple) else []
