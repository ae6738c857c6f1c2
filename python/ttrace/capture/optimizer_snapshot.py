"""The optimizer's state just before its first step (moved to host memory).

Optimizer-step replay must start from the state the reference's step started from. Before
the first step that state holds nothing computed by the candidate (zero moments, master
copies of the initial parameters that the replay overwrites), so it can stand in for the
reference's; later states come from the reference bundle's `optimizer_state`.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

import torch

from .capture_state import CaptureState

log = logging.getLogger("ttrace.capture")


def to_host_tree(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: to_host_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_host_tree(v) for v in value)
    return copy.deepcopy(value)


class OptimizerSnapshot:
    """Wraps `optimizer.step` on the instance; the first call records the state first."""

    def __init__(self, optimizer: Any, state: CaptureState) -> None:
        self.optimizer = optimizer
        self.state = state
        self.initial: dict[str, Any] | None = None
        self.iteration: int | None = None  # iteration of the first step
        # Why there is no snapshot, when the optimizer could not give one (the step replay
        # then needs the reference's state and says so).
        self.unavailable: str | None = None
        self._original: Callable[..., Any] = optimizer.step

        def step(*args: Any, **kwargs: Any) -> Any:
            if self.iteration is None:
                self.iteration = self.state.iteration
                self._record()
            return self._original(*args, **kwargs)

        optimizer.step = step

    def record_now(self, iteration: int | None) -> None:
        """A relaunch (`ttrace serve`): the optimizer is as the job's first step found it,
        which happened at `iteration` (from the bundle)."""
        self.iteration = iteration
        if iteration is not None:
            self._record()

    def _record(self) -> None:
        # A snapshot serves localize only: it must never stop the training job. Megatron's
        # DistributedOptimizer, for one, refuses state_dict() before its first step.
        if not hasattr(self.optimizer, "state_dict"):
            self.unavailable = f"{type(self.optimizer).__name__} has no state_dict()"
            return
        try:
            self.initial = to_host_tree(self.optimizer.state_dict())
        except Exception as exc:
            self.unavailable = f"{type(self.optimizer).__name__}.state_dict() failed: {exc!r}"
            log.warning("ttrace: no optimizer snapshot for step replay: %s", self.unavailable)

    def remove(self) -> None:
        self.optimizer.step = self._original
