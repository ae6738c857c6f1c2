"""The global gradient norm and the clip coefficient, recorded where the framework computes
them, for the manifest's `gradient_clipping` section (docs/bundle-format.md).

Gradient clipping multiplies every gradient by one coefficient, `min(max_norm / (norm +
1e-6), 1)`, from a norm reduced over every parameter and rank. The norm's own round-off (a
sum of millions of squares, reduced in another order over shards) or a bug in one gradient
moves every main gradient and the optimizer step by the same factor; with the coefficient of
both runs recorded, the comparison tells that factor from a gradient's own error
(docs/tolerance.md, "Gradient clipping").

Recorded at the function that applies the coefficient, so every framework that calls it is
covered: torch's `clip_grads_with_norm_` (what `torch.nn.utils.clip_grad_norm_`, torchtitan's
`clip_grad_norm_`, the Hugging Face Trainer and accelerate run) and Megatron-core's
`clip_grad_by_total_norm_fp32` (after its `get_grad_norm_fp32`). The norm they receive is
already reduced over the job; a DTensor norm (a partial norm) is made whole first, on every
rank alike, as the clipping itself does. A program that clips by its own code records its norm
with `record_gradient_clip`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .capture_state import CaptureState

# (module, attribute, name in the record): where each framework applies the coefficient.
_SITES = (
    ("torch.nn.utils.clip_grad", "_clip_grads_with_norm_", "torch.nn.utils.clip_grads_with_norm_"),
    ("torch.nn.utils", "clip_grads_with_norm_", "torch.nn.utils.clip_grads_with_norm_"),
    # Megatron-core's optimizers call the name they imported from `clip_grads`.
    (
        "megatron.core.optimizer.optimizer",
        "clip_grad_by_total_norm_fp32",
        "megatron.core.optimizer.clip_grads.clip_grad_by_total_norm_fp32",
    ),
)


@dataclass(frozen=True)
class ClipEntry:
    variant: str
    iteration: int
    total_norm: float
    max_norm: float
    source: str

    @property
    def coefficient(self) -> float:
        """What torch and Megatron-core multiply the gradients by."""
        if not math.isfinite(self.total_norm):
            return math.nan
        return min(self.max_norm / (self.total_norm + 1e-6), 1.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "iteration": self.iteration,
            "total_norm": self.total_norm,
            "max_norm": self.max_norm,
            "coefficient": self.coefficient,
            "source": self.source,
        }


def _whole(norm: Any) -> torch.Tensor:
    full = getattr(norm, "full_tensor", None)
    return full() if callable(full) else norm


class _ClipSites:
    """Process-wide: one wrapper per site while any recorder is open, noting to every open
    recorder. Two tracers alive in one process, each wrapping the functions on its own, closed
    out of order would put back the other's wrapper (or drop it): the functions are wrapped
    once, by the first recorder, and restored by the last one to leave."""

    def __init__(self) -> None:
        self.recorders: list[ClipRecorder] = []
        self._wrapped: list[tuple[Any, str, Callable[..., Any], Callable[..., Any]]] = []

    def enter(self, recorder: ClipRecorder) -> None:
        if not self.recorders:
            self._wrap_all()
        self.recorders.append(recorder)

    def leave(self, recorder: ClipRecorder) -> None:
        if recorder not in self.recorders:
            return
        self.recorders.remove(recorder)
        if not self.recorders:
            self._restore_all()

    def note(self, total_norm: Any, max_norm: float, source: str) -> None:
        for recorder in list(self.recorders):
            recorder.note(total_norm, max_norm, source)

    def _wrap_all(self) -> None:
        for module_name, attr, source in _SITES:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue  # that framework is not installed
            original = getattr(module, attr, None)
            if original is None:
                continue
            wrapper = self._wrap(original, source)
            setattr(module, attr, wrapper)
            self._wrapped.append((module, attr, original, wrapper))

    def _restore_all(self) -> None:
        for module, attr, original, wrapper in reversed(self._wrapped):
            # Something the program installed over ours after us stays: it holds ours, which
            # notes to no recorder now.
            if getattr(module, attr, None) is wrapper:
                setattr(module, attr, original)
        self._wrapped.clear()

    def _wrap(self, original: Callable[..., Any], source: str) -> Callable[..., Any]:
        def clip(parameters: Any, max_norm: float, total_norm: Any, *args: Any, **kw: Any) -> Any:
            self.note(total_norm, max_norm, source)
            return original(parameters, max_norm, total_norm, *args, **kw)

        clip.__wrapped__ = original  # type: ignore[attr-defined]
        return clip


_SITES_IN_USE = _ClipSites()


def record_gradient_clip(
    total_norm: torch.Tensor | float,
    max_norm: float,
    source: str = "ttrace.capture.record_gradient_clip",
) -> None:
    """Records a clipped step whose clipping the program computes itself (no function of torch
    or Megatron-core applies the coefficient): the global norm, reduced over the job as the
    clipping uses it, and the threshold. Call it in the step, where the clipping runs, on every
    rank; outside a captured step (or with no tracer open) it does nothing. The coefficient is
    recorded as `min(max_norm / (total_norm + 1e-6), 1)`, the one torch and Megatron-core
    apply."""
    _SITES_IN_USE.note(total_norm, float(max_norm), source)


class ClipRecorder:
    """Notes each clip call of a captured step while its tracer is open; one entry per call."""

    def __init__(self, state: CaptureState) -> None:
        self.state = state
        self.entries: list[ClipEntry] = []
        self._pending: list[tuple[str, int, torch.Tensor, float, str]] = []

    def install(self) -> None:
        _SITES_IN_USE.enter(self)

    def remove(self) -> None:
        _SITES_IN_USE.leave(self)
        self.flush()

    def note(self, total_norm: Any, max_norm: float, source: str) -> None:
        s = self.state
        if not (s.in_step and s.wants(-1)):
            return
        norm = total_norm if isinstance(total_norm, torch.Tensor) else torch.tensor(total_norm)
        # A copy, read at the step's end: reading it here would wait for the device.
        copy = _whole(norm).detach().clone()
        self._pending.append((s.variant, s.iteration, copy, float(max_norm), source))

    def flush(self) -> None:
        """Reads the norms noted so far (called after each step, when the step is done)."""
        for variant, iteration, norm, max_norm, source in self._pending:
            value = float(norm.double().cpu())
            self.entries.append(ClipEntry(variant, iteration, value, max_norm, source))
        self._pending.clear()

    def section(self) -> dict[str, Any] | None:
        """The manifest's `gradient_clipping` section; None when nothing clipped."""
        self.flush()
        if not self.entries:
            return None
        return {"steps": [e.to_json() for e in self.entries]}
