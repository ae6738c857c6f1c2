"""Main gradients before, and parameters after, the optimizer step.

`optimizer.step` is wrapped on the instance, so any optimizer object works (torch.optim,
Megatron-style wrappers, a hand-written one). The main gradient is `param.main_grad` when
the program keeps one (Megatron-style fp32 accumulation buffers), else `param.grad`. With a
distributed optimizer that exposes Megatron's `_get_model_param_range_map(param)`, only the
owned range `["param"]` of the flattened local tensor is captured, as flat ranges of the
logical parameter; parameters the rank owns nothing of are skipped (other ranks cover them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ttrace.bundle import Placement

from .capture_state import CaptureState
from .dtensor_placement import dtensor_placement, is_dtensor
from .module_hooks import ModuleHooks, to_host
from .shard_math import flat_ranges_of_box


class OptimizerHooks:
    def __init__(
        self, optimizer: Any, hooks: ModuleHooks, state: CaptureState, on_step: Callable[[], None]
    ) -> None:
        self.optimizer = optimizer
        self.hooks = hooks
        self.state = state
        self.on_step = on_step
        self._original = optimizer.step

        def step(*args: Any, **kwargs: Any) -> Any:
            self.before_step()
            result = self._original(*args, **kwargs)
            self.after_step()
            self.on_step()
            return result

        optimizer.step = step

    def remove(self) -> None:
        self.optimizer.step = self._original

    def _active(self, kind: str) -> bool:
        s = self.state
        return s.in_step and s.wants(-1) and s.wants_kind(kind)

    def before_step(self) -> None:
        if not self._active("main_grad"):
            return
        range_map = getattr(self.optimizer, "_get_model_param_range_map", None)
        for p in self.hooks.owner:
            grad = getattr(p, "main_grad", None)
            if grad is None:
                grad = p.grad
            if grad is None:
                continue
            self.hooks._guard(
                f"main_grad of {self.hooks.param_name(p)[1]}",
                lambda p=p, grad=grad: self._emit_main_grad(p, grad, range_map),
            )

    def _emit_main_grad(self, p: nn.Parameter, grad: Any, range_map: Any) -> None:
        if range_map is None:
            self.hooks.emit_param(p, grad, "main_grad", -1)
            return
        try:
            owned = range_map(p)["param"]
        except KeyError:
            return  # this rank owns no part of p
        module, mname, pname = self.hooks.param_name(p)
        _, box, _ = self.hooks.inference.parameter(p, p, module, "main_grad")
        start, end = int(owned.start), int(owned.end)
        ranges = flat_ranges_of_box(box, tuple(p.shape), start, end)
        info = self.hooks.inference.info
        tp_split = bool(getattr(p, "tensor_model_parallel", False)) and info.tp > 1
        tied = self.hooks.inference.tied_across_pp(p)
        combine = "replica" if (info.tp > 1 and not tp_split) or tied else "copy"
        placement = Placement.flat(box.global_shape, ranges, combine=combine)
        local = to_host(grad.reshape(-1)[start:end])
        self.hooks.sink(self.hooks._key(-1, mname, "main_grad", pname), local, placement, None)

    def after_step(self) -> None:
        if self._active("param_after_step"):
            for p in self.hooks.owner:
                self.hooks._guard(
                    f"param_after_step of {self.hooks.param_name(p)[1]}",
                    lambda p=p: self.hooks.emit_param(p, p, "param_after_step", -1),
                )
        if self._active("optimizer_state"):
            self._emit_optimizer_state()

    def _emit_optimizer_state(self) -> None:
        """Per-parameter state of torch.optim-style optimizers (`optimizer.state[param]`),
        stored as `<state>.<param>` with the parameter's placement (a DTensor state, as for
        tensor-parallel or FSDP2 parameters, as its local shard with its own placement).
        Optimizers that keep flat or sharded state elsewhere are not captured here."""
        state = getattr(self.optimizer, "state", None)
        if not hasattr(state, "get"):
            return
        for p in self.hooks.owner:
            entries = state.get(p) or {}
            for name, value in entries.items():
                if not (isinstance(value, torch.Tensor) and value.shape == p.shape):
                    continue  # scalars such as `step` are not parameter-shaped
                module, mname, pname = self.hooks.param_name(p)
                key = self.hooks._key(-1, mname, "optimizer_state", f"{name}.{pname}")
                self.hooks._guard(
                    key.path, lambda k=key, v=value, p=p, m=module: self._emit(k, v, p, m)
                )

    def _emit(self, key: Any, value: torch.Tensor, p: nn.Parameter, module: nn.Module) -> None:
        # A state that is not itself a DTensor (but its parameter is) shares the parameter's
        # local shape and placement.
        if is_dtensor(p) and not is_dtensor(value):
            _, placement = dtensor_placement(p)
            local = value
        else:
            source = value if is_dtensor(value) else p
            _, placement, _ = self.hooks.inference.parameter(source, p, module, "optimizer_state")
            local = value.to_local() if is_dtensor(value) else value
        self.hooks.sink(key, to_host(local), placement, None)
