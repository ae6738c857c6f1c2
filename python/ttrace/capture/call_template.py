"""How a captured module was called: its arguments with tensors replaced by slots.

The replay agent calls a module again with the reference's tensors in the slots and the
live non-tensor arguments of the original call (flags, config objects, process groups), so
that only the tensors change. Slot names follow the bundle's `forward_input` index: a
positional tensor at position i is slot "i", a keyword tensor is slot "<keyword>".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from .dtensor_spec import DTensorSpec


@dataclass(frozen=True)
class Slot:
    """A tensor argument: its bundle index and what the original tensor was like."""

    index: str
    requires_grad: bool
    is_float: bool
    dtype: torch.dtype
    shape: tuple[int, ...]
    # The DTensor it was (mesh and placements): a replay hands the module one again.
    dtensor: DTensorSpec | None = None


def _holds_tensor(value: Any, depth: int = 0) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if depth > 8:
        return False
    if isinstance(value, tuple | list | set | frozenset):
        return any(_holds_tensor(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        return any(_holds_tensor(v, depth + 1) for v in value.values())
    return False


@dataclass
class CallTemplate:
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    calls: int = 1  # call 0's: calls of the module within this (iteration, micro-batch)
    stochastic: bool = False  # a random generator advanced during the call
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of_call(cls, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> CallTemplate:
        problems: list[str] = []

        def slot(index: str, value: Any) -> Any:
            if isinstance(value, torch.Tensor):
                return Slot(
                    index,
                    bool(value.requires_grad),
                    bool(value.is_floating_point()),
                    value.dtype,
                    tuple(value.shape),
                    DTensorSpec.of(value),
                )
            if _holds_tensor(value):
                # Capture records top-level tensors only: a tensor inside a container has no
                # reference value, and keeping the candidate's would put it on trial too.
                problems.append(
                    f"inputs not captured: argument {index} holds tensors in a container"
                )
            return value

        return cls(
            tuple(slot(str(i), a) for i, a in enumerate(args)),
            {k: slot(k, v) for k, v in kwargs.items()},
            problems=problems,
        )

    def slots(self) -> list[Slot]:
        return [a for a in (*self.args, *self.kwargs.values()) if isinstance(a, Slot)]

    def bind(self, tensors: Mapping[str, torch.Tensor]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's (args, kwargs) with every slot filled from `tensors` (by index)."""

        def fill(value: Any) -> Any:
            return tensors[value.index] if isinstance(value, Slot) else value

        return tuple(fill(a) for a in self.args), {k: fill(v) for k, v in self.kwargs.items()}

    def why_not_replayable(self) -> str:
        if self.stochastic:
            return "stochastic: draws random numbers"
        return self.problems[0] if self.problems else ""
