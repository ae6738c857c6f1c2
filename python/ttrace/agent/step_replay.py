"""Optimizer-step replay: the candidate's optimizer, fed the reference's parameters,
optimizer state and main gradients, takes one step.

The state the step starts from is the reference's `optimizer_state` of the previous
iteration (torch.optim-style state, as capture records it) or, for the job's first step,
the optimizer's own state before that step (nothing in it was computed by the candidate).
Optimizers that keep fp32 master copies of the parameters must offer Megatron's
`reload_model_params()` so that the fed parameters reach the masters.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ttrace.bundle import DType, TensorKey
from ttrace.capture.optimizer_snapshot import to_host_tree

from .dtensor_local import local_of, shaped_like
from .errors import AgentError, ErrorCode
from .own_capture import OwnTensor
from .rank_gate import RankGate
from .replay_context import ReplayContext
from .replay_request import ReplayRequest
from .shard_codec import shard_entry
from .state_guard import StateGuard

Shard = tuple[dict[str, Any], bytes]


class StepReplay:
    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.optimizer = ctx.tracer.optimizer

    def run(self, req: ReplayRequest, gate: RankGate) -> list[Shard]:
        gate.step(self._check)
        params = list(self.ctx.hooks.owner)
        shards: list[Shard] = []
        for variant in req.variants:
            guard = StateGuard(self.ctx.tracer.roots, self.optimizer)
            try:
                gate.step(lambda v=variant: self._feed(params, v, req.iteration))
                shards += gate.step(lambda v=variant: self._step(params, v, req))
            finally:
                guard.restore()
        return shards

    def _check(self) -> None:
        if self.optimizer is None:
            raise AgentError(ErrorCode.NOT_REPLAYABLE, "the Tracer was given no optimizer")

    def _feed(self, params: list[nn.Parameter], variant: str, iteration: int) -> None:
        self._start_state(params, variant, iteration)
        self._feed_grads(params, variant, iteration)

    def _step(self, params: list[nn.Parameter], variant: str, req: ReplayRequest) -> list[Shard]:
        self.optimizer.step()
        return self._results(params, variant, req)

    def _start_state(self, params: list[nn.Parameter], variant: str, iteration: int) -> None:
        snap = self.ctx.tracer.opt_snapshot
        first = snap is not None and snap.initial is not None and snap.iteration == iteration
        if first:
            self.optimizer.load_state_dict(to_host_tree(snap.initial))
        self.ctx.feed_parameters(params, variant, iteration)
        if first:
            reload = getattr(self.optimizer, "reload_model_params", None)
            if callable(reload):
                reload()
            return
        self._load_reference_state(params, variant, iteration)

    def _load_reference_state(
        self, params: list[nn.Parameter], variant: str, iteration: int
    ) -> None:
        state = getattr(self.optimizer, "state", None)
        why = f"the optimizer state left by iteration {iteration - 1}"
        if iteration == 0 or not hasattr(state, "get"):
            snap = self.ctx.tracer.opt_snapshot
            reason = snap.unavailable if snap is not None and snap.unavailable else None
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{why} is unknown: "
                + (reason or "not the job's first step")
                + ", and the optimizer keeps no torch.optim-style state that capture records",
            )
        for p in params:
            for name, value in list((state.get(p) or {}).items()):
                if not (isinstance(value, torch.Tensor) and value.shape == p.shape):
                    raise AgentError(
                        ErrorCode.NOT_REPLAYABLE,
                        f"{why}: entry {name!r} is not parameter-shaped and not captured",
                    )
                _, mname, pname = self.ctx.param_id(p)
                key = TensorKey(
                    variant, iteration - 1, -1, mname, "optimizer_state", f"{name}.{pname}"
                )
                with torch.no_grad():
                    local = local_of(value)
                    local.copy_(self.ctx.feed.shard(key, local.device).to(local.dtype))

    def _feed_grads(self, params: list[nn.Parameter], variant: str, iteration: int) -> None:
        for p in params:
            key = self.ctx.param_key(p, variant, iteration, -1, "main_grad")
            own = self.ctx.feed.own.get(key.with_variant("nominal"))
            if own is None or own.placement.layout == "flat":
                self._feed_buffer_grad(p, key, own)
                continue
            grad = self.ctx.feed.shard(key, p.device)
            if hasattr(p, "main_grad"):
                p.main_grad = grad.clone()
            p.grad = shaped_like(p, grad.to(p.dtype))

    def _feed_buffer_grad(self, p: nn.Parameter, key: TensorKey, own: OwnTensor | None) -> None:
        """A distributed (ZeRO) optimizer: capture recorded only this rank's owned slice of
        the flat gradient buffer (nothing for a parameter outside it), and the optimizer reads
        its gradients from that buffer, not from `main_grad`. As in Megatron, `p.main_grad` is
        a view of the buffer: the reference's gradient, cut as the parameter is cut, is
        written through the view, so it lands where the job's own reduction put the
        candidate's."""
        main = getattr(p, "main_grad", None)
        view = isinstance(main, torch.Tensor) and main.shape == p.shape and main._base is not None
        if own is None and not view:
            self.ctx.feed.own_tensor(key)  # raises: nothing to place the gradient by
        if not view:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{key.module}.{key.index}: the distributed optimizer's main_grad is not a view "
                "of its gradient buffer, so the reference's gradient cannot reach the optimizer",
            )
        param = self.ctx.feed.own_tensor(
            self.ctx.param_key(p, key.variant, key.iteration, -1, "parameter")
        )
        dtype = DType.from_torch(main.dtype).name
        as_param = OwnTensor(param.placement, param.shape, dtype, param.is_scalar)
        with torch.no_grad():
            main.copy_(self.ctx.feed.shard(key, main.device, place_as=as_param).to(main.dtype))

    def _results(self, params: list[nn.Parameter], variant: str, req: ReplayRequest) -> list[Shard]:
        ctx = self.ctx
        shards: list[Shard] = []
        state = getattr(self.optimizer, "state", None)
        for p in params:
            owner, mname, pname = ctx.param_id(p)
            if req.module and not (mname == req.module or mname.startswith(req.module + ".")):
                continue
            key = TensorKey(variant, req.iteration, -1, mname, "param_after_step", pname)
            shards.append(self._placed(key, p, p, owner))
            entries = (state.get(p) or {}) if hasattr(state, "get") else {}
            for name, value in entries.items():
                if isinstance(value, torch.Tensor) and value.shape == p.shape:
                    k = TensorKey(
                        variant, req.iteration, -1, mname, "optimizer_state", f"{name}.{pname}"
                    )
                    shards.append(self._placed(k, value, p, owner))
        return shards

    def _placed(
        self, key: TensorKey, value: torch.Tensor, p: nn.Parameter, owner: nn.Module
    ) -> Shard:
        """`value` placed as this rank's capture placed the same id (the inference's
        parameter placement where it stored none, as capture computes it)."""
        ctx = self.ctx
        data, placement = ctx.placer.place(
            key, value, lambda: ctx.inference.parameter(value, p, owner, key.kind)[:2]
        )
        return shard_entry(key, data, placement, ctx.rank)
