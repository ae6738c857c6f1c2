"""Which micro-batch a pipelining stage's backward runs, and the gradients it accumulates.

A parameter's `param_grad` of micro-batch m is what `.grad` holds once micro-batches 0..m
have run backward (the reference runs them in order). Schedules that run a stage's backward
in another order than its forwards (torch's `ScheduleLoopedBFS` runs them in reverse) leave
in `.grad` sums over other sets of micro-batches: after the first backward of two, micro-batch
1's gradient alone. Filing that as micro-batch 0 would call a correct run divergent.

So for the modules of a torch.distributed.pipelining stage, the backward's micro-batch is
read from the stage's output: the forward of micro-batch m hooks its output's gradient, which
autograd computes before any parameter gradient of that backward. While the micro-batches
accumulated so far are 0..k, in order, `.grad` is filed as it is. Out of order, each
accumulation's own gradient (the difference of `.grad` after and before it, kept on the
parameter's device) is kept until 0..k have all run; then micro-batch m's entry is their sum
over 0..m, and the last one `.grad` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .capture_state import CaptureState


@dataclass
class _Accumulated:
    """One parameter's gradients in this step: how many micro-batches are filed (0..filed-1),
    and, out of order, `.grad` before the first unfiled one and each unfiled one's own."""

    filed: int = 0
    base: torch.Tensor | None = None
    own: dict[int, torch.Tensor] = field(default_factory=dict)


class BackwardOrder:
    """Backward micro-batches of the chunks that are pipelining stages (by root index)."""

    def __init__(
        self,
        state: CaptureState,
        chunks: set[int],
        params_of: Callable[[int], list[tuple[nn.Parameter, torch.Tensor]]],
    ) -> None:
        self.state = state
        self.chunks = chunks
        self.params_of = params_of
        self.current: dict[int, int] = {}  # chunk -> micro-batch of its running backward
        self._started: dict[int, set[int]] = {}
        # chunk -> `.grad` of its parameters (of the tensors it accumulates on: FSDP2's
        # unsharded ones) before its running backward, taken only when that backward runs
        # out of order
        self._before: dict[int, dict[nn.Parameter, torch.Tensor | None]] = {}
        self._params: dict[nn.Parameter, _Accumulated] = {}
        self.handles: list[Any] = []

    def install(self, roots: list[nn.Module]) -> None:
        for index, root in enumerate(roots):
            if index in self.chunks:
                self.handles.append(root.register_forward_hook(self._output_hook(index)))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()

    def reset(self) -> None:
        """A new step (or variant): nothing accumulated yet."""
        self.current.clear()
        self._started.clear()
        self._before.clear()
        self._params.clear()

    def _output_hook(self, chunk: int) -> Callable:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            s = self.state
            first = _first_grad_tensor(output)
            if s.in_step and first is not None:
                first.register_hook(self._started_hook(chunk, s.forward_mb))

        return hook

    def _started_hook(self, chunk: int, mb: int) -> Callable:
        def started(grad: torch.Tensor) -> None:
            if not self.state.in_step:
                return
            seen = self._started.setdefault(chunk, set())
            in_order = mb == len(seen) and seen == set(range(len(seen)))
            seen.add(mb)
            self.current[chunk] = mb
            if in_order:
                self._before.pop(chunk, None)
                return
            self._before[chunk] = {
                p: None if t.grad is None else t.grad.detach().clone()
                for p, t in self.params_of(chunk)
            }

        return started

    def accumulated(
        self, p: nn.Parameter, chunk: int, count: int, grad: torch.Tensor
    ) -> list[tuple[int, torch.Tensor]]:
        """The (micro-batch, gradient) entries to file now that `grad` (the parameter's
        `.grad`) took its `count`-th backward pass of the step."""
        if chunk not in self.chunks:
            return [(count, grad)]
        mb = self.current.get(chunk, count)
        acc = self._params.setdefault(p, _Accumulated())
        before = self._before.get(chunk)
        if before is None and not acc.own and mb == acc.filed:
            acc.filed += 1
            return [(mb, grad)]
        prior = before.get(p) if before is not None else None
        if not acc.own:
            acc.base = prior
        acc.own[mb] = grad.detach().clone() if prior is None else grad.detach() - prior
        pending = range(acc.filed, acc.filed + len(acc.own))
        if set(acc.own) != set(pending):
            return []
        total = acc.base.double() if acc.base is not None else None
        out = []
        for m in pending:
            own = acc.own[m].double()
            total = own if total is None else total + own
            out.append((m, grad if m == pending[-1] else total.to(grad.dtype)))
        acc.filed += len(acc.own)
        acc.own.clear()
        acc.base = None
        return out


def _first_grad_tensor(output: Any) -> torch.Tensor | None:
    """The first tensor of a module's output that gradients flow back through."""
    if isinstance(output, torch.Tensor):
        return output if output.requires_grad else None
    values = output.values() if isinstance(output, dict) else output
    if isinstance(values, list | tuple) or isinstance(output, dict):
        for v in values:
            found = _first_grad_tensor(v)
            if found is not None:
                return found
    return None
