"""The training state a perturbed variant must not leak into the next: model tensors,
optimizer state and main (fp32) parameters, every random generator.

Saved and restored tensor by tensor, in place, so that any structure survives: modules whose
state dict holds non-tensor entries (Megatron-core's `_extra_state`, which is None or a
serialized blob: nothing a training step changes, so nothing to restore), parameters living
in a data-parallel wrapper's contiguous buffer, and wrapped optimizers whose main parameters
are fp32 copies of the model's (Megatron-core's mixed-precision and distributed optimizers,
`ChainedOptimizer`). Wrapped optimizers are walked down to the torch optimizers inside
(`chained_optimizers`, `.optimizer`); their parameters and per-parameter state are the
ground truth a wrapper derives everything else from.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .generator_states import GeneratorStates


def torch_optimizers(optimizer: Any, depth: int = 0) -> list[torch.optim.Optimizer]:
    """The torch optimizers inside a (possibly wrapped, possibly chained) optimizer."""
    if optimizer is None or depth > 8:
        return []
    if isinstance(optimizer, torch.optim.Optimizer):
        return [optimizer]
    chained = getattr(optimizer, "chained_optimizers", None)
    if isinstance(chained, Sequence):
        return [o for c in chained for o in torch_optimizers(c, depth + 1)]
    return torch_optimizers(getattr(optimizer, "optimizer", None), depth + 1)


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return copy.deepcopy(value)


class TrainingSnapshot:
    def __init__(self, roots: Sequence[nn.Module], optimizer: Any) -> None:
        self.tensors: list[tuple[torch.Tensor, torch.Tensor]] = []
        seen: set[int] = set()
        for root in roots:
            for value in root.state_dict(keep_vars=True).values():
                self._keep(value, seen)
        self.optimizers = torch_optimizers(optimizer)
        self.opt_state: list[dict[Any, dict[str, Any]]] = []
        for opt in self.optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    self._keep(p, seen)
            self.opt_state.append(
                {p: {k: _clone(v) for k, v in s.items()} for p, s in opt.state.items()}
            )
        # An optimizer ttrace cannot see into keeps its own state dict (a copy: torch's
        # load_state_dict adopts the tensors it is given as live state).
        self.fallback = (
            copy.deepcopy(optimizer.state_dict())
            if optimizer is not None and not self.optimizers
            else None
        )
        self.optimizer = optimizer
        self.rng = GeneratorStates(roots)

    def _keep(self, value: Any, seen: set[int]) -> None:
        # Non-tensor state (None, bytes) is not changed by a training step.
        if isinstance(value, torch.Tensor) and id(value) not in seen:
            seen.add(id(value))
            self.tensors.append((value, value.detach().clone()))

    def restore(self) -> None:
        with torch.no_grad():
            for live, saved in self.tensors:
                live.copy_(saved)
        for opt, state in zip(self.optimizers, self.opt_state, strict=True):
            opt.state.clear()
            for p, entries in state.items():
                opt.state[p] = {k: _clone(v) for k, v in entries.items()}
        if self.fallback is not None:
            self.optimizer.load_state_dict(copy.deepcopy(self.fallback))
        self.rng.restore()
