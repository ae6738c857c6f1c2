"""Records, per captured module and (iteration, micro-batch), how the module was called.

Its own `register_forward_pre_hook(..., with_kwargs=True)` hooks (independent of the capture
hooks) keep a `CallTemplate`: positional and keyword arguments, tensors replaced by slots,
non-tensor arguments kept as the live objects. A forward hook compares the random
generators' states around the call, so a module that draws random numbers (dropout) is known
as stochastic: its replay would not see the reference's random stream.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .call_log import call_name, in_backward
from .call_template import CallTemplate
from .capture_state import CaptureState
from .compiled_regions import hook_module
from .naming import ModuleNames


def rng_fingerprint() -> list[torch.Tensor]:
    """The states of the CPU generator and, where CUDA is in use, the current device's."""
    states = [torch.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.append(torch.cuda.get_rng_state())
    return states


def same_rng(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


class CallRecorder:
    def __init__(self, names: ModuleNames, state: CaptureState) -> None:
        self.names = names
        self.state = state
        # Call 0 of each module per (iteration, micro-batch), under the module's name; a
        # relaunch from the bundles restores these.
        self.templates: dict[str, dict[tuple[int, int], CallTemplate]] = {}
        # Calls k >= 1 of a module run more than once in a micro-batch, under the names
        # capture files them under (`<module>@call<k>`, `call_log.call_name`).
        self.later_calls: dict[str, dict[tuple[int, int], CallTemplate]] = {}
        self.handles: list[Any] = []
        self._open: dict[nn.Module, list[tuple[CallTemplate, list[torch.Tensor]]]] = {}

    def install(self, selected: list[nn.Module]) -> None:
        for module in selected:
            self.handles += hook_module(module, self._pre, self._post)

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()
        self._open.clear()

    def _recording(self) -> bool:
        s = self.state
        # A forward during backward is a recompute, not a call of the micro-batch.
        return s.in_step and s.variant == "nominal" and s.wants(s.forward_mb) and not in_backward()

    def _pre(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        if not self._recording():
            return
        s = self.state
        name = self.names.name(module)
        key = (s.iteration, s.forward_mb)
        template = CallTemplate.of_call(args, kwargs)
        first = self.templates.setdefault(name, {})
        if key not in first:
            first[key] = template
        else:
            # Counted as capture counts them: call k's template under `<module>@call<k>`.
            first[key].calls += 1
            k = first[key].calls - 1
            self.later_calls.setdefault(call_name(name, k), {})[key] = template
        self._open.setdefault(module, []).append((template, rng_fingerprint()))

    def _post(self, module: nn.Module, args: tuple, output: Any) -> None:
        stack = self._open.get(module)
        if not stack:
            return
        template, before = stack.pop()
        if not same_rng(before, rng_fingerprint()):
            template.stochastic = True

    def template(self, module: str, iteration: int, micro_batch: int) -> CallTemplate | None:
        """The template of call `module` (a module's name: call 0; `<module>@call<k>`)."""
        per_call = self.templates.get(module) or self.later_calls.get(module, {})
        return per_call.get((iteration, micro_batch))

    def call_names(self) -> list[str]:
        return [*self.templates, *self.later_calls]

    def any_template(self, module: str) -> tuple[tuple[int, int], CallTemplate] | None:
        """The earliest recorded call of `module`, for static replayability checks."""
        per_module = self.templates.get(module) or self.later_calls.get(module)
        if not per_module:
            return None
        key = min(per_module)
        return key, per_module[key]
