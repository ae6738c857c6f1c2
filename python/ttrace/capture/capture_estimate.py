"""How many bytes a capture will write per iteration and rank, said once at its start.

A capture of a big model can write more per step than the training job's disk holds in an
hour; the user must know before the job runs, to choose modules and iterations
(docs/capture.md, "Sizing a capture"). At `Tracer` start only the parameters are known
(their own kinds: the parameter, its gradient per micro-batch, the main gradient, the
parameter after the step, and about two optimizer state tensors per parameter, as Adam
keeps); activations and their gradients depend on the input and are measured: after the
first captured iteration the estimate is refined with the bytes that iteration queued.

Rank 0 says both, through the package's logger. An unconfigured program shows only
warnings (logging's last resort handler, on stderr): the estimate is logged as a warning
there, so that it is seen, and as information where logging is configured to show it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from torch import nn

from .capture_state import CaptureState

log = logging.getLogger("ttrace.capture")

# Per parameter and iteration: how many parameter-sized tensors each kind writes.
_PER_PARAMETER = {
    "parameter": 1,
    "param_grad": 1,  # per micro-batch
    "main_grad": 1,
    "param_after_step": 1,
    "optimizer_state": 2,  # Adam's exp_avg and exp_avg_sq; SGD keeps fewer, mixed more
}
_ACTIVATION_KINDS = ("forward_input", "forward_output", "output_grad", "input_grad")


class CaptureEstimate:
    def __init__(
        self,
        modules: Iterable[nn.Module],
        state: CaptureState,
        variants: int,
        rank: int,
        has_optimizer: bool,
    ) -> None:
        self.state = state
        self.variants = max(1, variants)
        self.rank = rank
        seen: set[int] = set()
        self.parameter_bytes = 0
        for module in modules:
            for p in module.parameters(recurse=False):
                if id(p) not in seen:  # shared (tied) parameters are captured once
                    seen.add(id(p))
                    self.parameter_bytes += p.numel() * p.element_size()
        kinds = [k for k in _PER_PARAMETER if state.wants_kind(k)]
        if not has_optimizer:
            kinds = [k for k in kinds if k == "parameter" or k == "param_grad"]
        self.parameter_kinds_bytes = sum(_PER_PARAMETER[k] for k in kinds) * self.parameter_bytes
        self.measured: int | None = None  # bytes of the first captured iteration

    def announce(self) -> None:
        """At start: the parameter-shaped part, and that activations come after."""
        if self.rank != 0:
            return
        activations = [k for k in _ACTIVATION_KINDS if self.state.wants_kind(k)]
        _say(
            "ttrace: capture estimate (rank 0): %s per captured iteration from the selected "
            "modules' parameters, gradients and optimizer state%s%s",
            _size(self.parameter_kinds_bytes),
            " plus their activations and activation gradients (measured after the first "
            "captured iteration)"
            if activations
            else "",
            self._total(self.parameter_kinds_bytes, "at least" if activations else "about"),
        )

    def step_queued(self, iteration: int, nbytes: int) -> None:
        """The first captured iteration is queued: say what it measured."""
        if self.measured is not None or nbytes <= 0:
            return
        self.measured = nbytes
        if self.rank == 0:
            _say(
                "ttrace: capture measured (rank 0): %s in iteration %d%s",
                _size(nbytes),
                iteration,
                self._total(nbytes, "about"),
            )

    def _total(self, per_iteration: int, bound: str) -> str:
        iterations = self.state.iterations
        if iterations is None:
            return "; every iteration is captured (Tracer(iterations=...) bounds it)"
        runs = len(iterations) * self.variants
        total = _size(per_iteration * runs)
        return f"; {len(iterations)} iteration(s) x {self.variants} variant(s): {bound} {total}" + (
            " per rank"
        )


def _say(message: str, *args: object) -> None:
    configured = log.hasHandlers() and log.isEnabledFor(logging.INFO)
    log.log(logging.INFO if configured else logging.WARNING, message, *args)


def _size(nbytes: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"
