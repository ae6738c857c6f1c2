"""Main gradients before, and parameters after, the optimizer step.

`optimizer.step` is wrapped on the instance, so any optimizer object works (torch.optim,
Megatron-style wrappers, a hand-written one). The main gradient is `param.main_grad` when
the program keeps one (Megatron-style fp32 accumulation buffers), else `param.grad`. With a
distributed optimizer that exposes Megatron's `_get_model_param_range_map(param)`, only the
owned range `["param"]` of the flattened local tensor is captured, as flat ranges of the
logical parameter; parameters the rank owns nothing of are skipped (other ranks cover them).
Optimizer state is found through `OptimizerView` (torch optimizers and Megatron-core's
wrappers, chained, mixed-precision and distributed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ttrace.bundle import Placement

from .capture_state import CaptureState
from .dtensor_placement import dtensor_placement, is_dtensor
from .module_hooks import ModuleHooks
from .optimizer_config import OptimizerConfigRecorder
from .optimizer_view import OWNED_ELSEWHERE, OptimizerView
from .shard_math import flat_ranges_of_box

log = logging.getLogger("ttrace.capture")


class OptimizerHooks:
    def __init__(
        self, optimizer: Any, hooks: ModuleHooks, state: CaptureState, on_step: Callable[[], None]
    ) -> None:
        self.optimizer = optimizer
        self.hooks = hooks
        self.state = state
        self.on_step = on_step
        self._original = optimizer.step
        self._reported: set[str] = set()
        # The hyper-parameters of each captured step, for the manifest's `optimizer` section.
        self.config = OptimizerConfigRecorder(optimizer, self._qualified_name)

        def step(*args: Any, **kwargs: Any) -> Any:
            closure = kwargs.get("closure", args[0] if args else None)
            if closure is None:
                self.before_step()
            else:
                # A closure (Lightning's automatic optimization) runs the forward and backward
                # inside step(): the gradients exist only once it has returned.
                wrapped = self._after_closure(closure)
                if "closure" in kwargs:
                    kwargs["closure"] = wrapped
                else:
                    args = (wrapped, *args[1:])
            result = self._original(*args, **kwargs)
            self.after_step()
            self.on_step()
            return result

        optimizer.step = step

    def remove(self) -> None:
        self.optimizer.step = self._original

    def _after_closure(self, closure: Callable[[], Any]) -> Callable[[], Any]:
        """`closure`, then the main gradients read once: an optimizer that evaluates its
        closure again (L-BFGS) reads them after the first evaluation only."""
        done = False

        def run() -> Any:
            nonlocal done
            result = closure()
            if not done:
                done = True
                self.before_step()
            return result

        return run

    def _active(self, kind: str) -> bool:
        s = self.state
        return s.in_step and s.wants(-1) and s.wants_kind(kind)

    def before_step(self) -> None:
        if not self._active("main_grad"):
            return
        view = OptimizerView(self.optimizer)
        for p in self.hooks.owner:
            grad = getattr(p, "main_grad", None)
            if grad is None:
                grad = p.grad
            if grad is None:
                continue
            self.hooks._guard(
                f"main_grad of {self.hooks.param_name(p)[1]}",
                lambda p=p, grad=grad: self._emit_main_grad(p, grad, view),
            )

    def _emit_main_grad(self, p: nn.Parameter, grad: Any, view: OptimizerView) -> None:
        if not view.sharded:
            self.hooks.emit_param(p, grad, "main_grad", -1)
            return
        owned = view.flat_range(p)
        if owned is None:
            return  # this rank owns no part of p
        self._emit_flat(p, "main_grad", "", grad, owned)

    def _emit_flat(
        self, p: nn.Parameter, kind: str, prefix: str, tensor: Any, flat: tuple[int, int]
    ) -> None:
        """The owned range [start, end) of a distributed optimizer's flattened parameter,
        as flat ranges of the logical parameter. `tensor` is parameter-shaped (a main
        gradient) or already the owned range (a state shard)."""
        module, mname, pname = self.hooks.param_name(p)
        _, box, _ = self.hooks.inference.parameter(p, p, module, kind)
        start, end = flat
        ranges = flat_ranges_of_box(box, tuple(p.shape), start, end)
        info = self.hooks.inference.info
        tp_split = bool(getattr(p, "tensor_model_parallel", False)) and info.tp > 1
        tied = self.hooks.inference.tied_across_pp(p)
        combine = "replica" if (info.tp > 1 and not tp_split) or tied else "copy"
        placement = Placement.flat(box.global_shape, ranges, combine=combine)
        flat_local = tensor.reshape(-1)
        local = self.hooks.host(
            flat_local[start:end] if flat_local.numel() == p.numel() else flat_local
        )
        key = self.hooks._key(-1, mname, kind, prefix + pname)
        self.hooks.queue(key, local, placement, None)

    def _qualified_name(self, p: torch.Tensor) -> str | None:
        try:
            _, mname, pname = self.hooks.param_name(p)
        except KeyError:  # a tensor the model does not own (a main copy of a wrapper)
            return None
        return f"{mname}/{pname}"

    def after_step(self) -> None:
        if self.state.in_step and self.state.wants(-1):
            self.config.record(self.state.iteration)
        if self._active("param_after_step"):
            for p in self.hooks.owner:
                self.hooks._guard(
                    f"param_after_step of {self.hooks.param_name(p)[1]}",
                    lambda p=p: self.hooks.emit_param(p, p, "param_after_step", -1),
                )
        if self._active("optimizer_state"):
            self._emit_optimizer_state()

    def _emit_optimizer_state(self) -> None:
        """Per-parameter state (see `OptimizerView`), stored as `<state>.<param>` with the
        parameter's placement (a DTensor state, as for tensor-parallel or FSDP2
        parameters, as its local shard with its own placement; a distributed optimizer's
        shard as flat ranges). A parameter whose state cannot be found is reported once."""
        view = OptimizerView(self.optimizer)
        missing: dict[str, list[str]] = {}
        for p in self.hooks.owner:
            if not p.requires_grad:
                continue
            entry, why = view.entry(p)
            if entry is None or not entry.tensors:
                why = why or "the optimizer holds no parameter-shaped state"
                if why != OWNED_ELSEWHERE:  # the owning rank captures it
                    missing.setdefault(why, []).append(".".join(self.hooks.param_name(p)[1:]))
                continue
            module, mname, pname = self.hooks.param_name(p)
            for name, value in entry.tensors.items():
                key = self.hooks._key(-1, mname, "optimizer_state", f"{name}.{pname}")
                if entry.flat_range is not None:
                    self.hooks._guard(
                        key.path,
                        lambda p=p, n=name, v=value, r=entry.flat_range: self._emit_flat(
                            p, "optimizer_state", f"{n}.", v, r
                        ),
                    )
                    continue
                self.hooks._guard(
                    key.path, lambda k=key, v=value, p=p, m=module: self._emit(k, v, p, m)
                )
        self._report_missing(missing)

    def _report_missing(self, missing: dict[str, list[str]]) -> None:
        """One warning per reason (the first time it occurs), naming the parameters."""
        for why, names in missing.items():
            if why in self._reported:
                continue
            self._reported.add(why)
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            log.warning("ttrace: optimizer state not captured for %s: %s", shown, why)

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
        self.hooks.queue(key, self.hooks.host(local), placement, None)
