"""Forward and backward replay of one module with the reference's inputs.

The module gets the reference's parameters of the iteration, its forward inputs (and, for
backward, its output gradients), each cut to this rank's shard; it is called with the
arguments it was called with during capture (its call template), inside the captured
precision recipe. What it returns is placed by the tracer's own inference, exactly as
capture places it, so the client merges replayed shards like captured ones.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ttrace.bundle import Placement, TensorKey
from ttrace.capture.call_template import CallTemplate
from ttrace.capture.module_hooks import flatten

from .errors import AgentError, ErrorCode
from .own_capture import OwnTensor
from .rank_gate import RankGate
from .replay_context import ReplayContext, device_of, unique_params
from .replay_request import ReplayRequest
from .shard_codec import shard_entry
from .state_guard import RngState, StateGuard

Shard = tuple[dict[str, Any], bytes]


class ModuleReplay:
    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx

    def template(self, req: ReplayRequest) -> CallTemplate | None:
        """The call to replay; None when this rank holds no part of the module."""
        ctx = self.ctx
        if req.module not in ctx.by_name or ctx.recorder.any_template(req.module) is None:
            return None
        template = ctx.recorder.template(req.module, req.iteration, req.micro_batch)
        if template is None:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{req.module} was not captured at iteration {req.iteration} "
                f"micro-batch {req.micro_batch}",
            )
        why = template.why_not_replayable()
        if why:
            raise AgentError(ErrorCode.NOT_REPLAYABLE, why)
        return template

    def run(self, req: ReplayRequest, gate: RankGate) -> list[Shard]:
        """Every rank runs the same gate stages, also one that holds no part of the module."""
        template = gate.step(lambda: self.template(req))
        module = self.ctx.by_name[req.module] if template is not None else None
        shards: list[Shard] = []
        for variant in req.variants:
            guard = StateGuard([module]) if module is not None else None
            try:
                shards += self._variant(module, template, req, variant, gate)
            finally:
                if guard is not None:
                    guard.restore()
        return shards

    def _key(self, req: ReplayRequest, variant: str, kind: str, index: Any) -> TensorKey:
        return TensorKey(variant, req.iteration, req.micro_batch, req.module, kind, str(index))

    def _inputs(
        self, template: CallTemplate, req: ReplayRequest, variant: str, device: torch.device
    ) -> dict[str, torch.Tensor]:
        tensors: dict[str, torch.Tensor] = {}
        for slot in template.slots():
            key = self._key(req, variant, "forward_input", slot.index)
            if not self.ctx.feed.has(key):
                # Never the candidate's own value instead: that would put it on trial too.
                raise AgentError(
                    ErrorCode.NOT_REPLAYABLE,
                    f"inputs not captured: the reference has no {key.path}",
                )
            t = self.ctx.feed.shard(key, device)
            if req.phase == "backward" and slot.requires_grad and t.is_floating_point():
                t.requires_grad_()
            tensors[slot.index] = t
        return tensors

    def _variant(
        self,
        module: nn.Module | None,
        template: CallTemplate | None,
        req: ReplayRequest,
        variant: str,
        gate: RankGate,
    ) -> list[Shard]:
        if module is None or template is None:
            for _ in range(4 if req.phase == "backward" else 2):
                gate.step(lambda: None)
            return []
        device = device_of(module)
        params = unique_params(module)
        tensors = gate.step(lambda: self._prepare(params, template, req, variant, device))
        outputs, shards = gate.step(lambda: self._forward(module, template, tensors, req, variant))
        if req.phase == "backward":
            roots, grads = gate.step(lambda: self._output_grads(outputs, req, variant, device))
            shards += gate.step(
                lambda: self._backward(
                    module, template, tensors, params, roots, grads, req, variant
                )
            )
        return shards

    def _prepare(
        self,
        params: list[nn.Parameter],
        template: CallTemplate,
        req: ReplayRequest,
        variant: str,
        device: torch.device,
    ) -> dict[str, torch.Tensor]:
        self.ctx.feed_parameters(params, variant, req.iteration)
        return self._inputs(template, req, variant, device)

    def _forward(
        self,
        module: nn.Module,
        template: CallTemplate,
        tensors: dict[str, torch.Tensor],
        req: ReplayRequest,
        variant: str,
    ) -> tuple[list[Any], list[Shard]]:
        ctx = self.ctx
        args, kwargs = template.bind(tensors)
        before = RngState()
        with torch.enable_grad(), ctx.precision_scope(device_of(module)):
            output = module(*args, **kwargs)
        if not before.same_as(RngState()):
            raise AgentError(ErrorCode.NOT_REPLAYABLE, "stochastic: draws random numbers")
        outputs = flatten(output)
        shards: list[Shard] = []
        for i, t in enumerate(outputs):
            if isinstance(t, torch.Tensor):
                local, placement = ctx.inference.activation(module, "out", i, t)
                key = self._key(req, variant, "forward_output", i)
                shards.append(shard_entry(key, local, placement, ctx.rank))
        return outputs, shards

    def _backward(
        self,
        module: nn.Module,
        template: CallTemplate,
        tensors: dict[str, torch.Tensor],
        params: list[nn.Parameter],
        roots: list[torch.Tensor],
        grads: list[torch.Tensor],
        req: ReplayRequest,
        variant: str,
    ) -> list[Shard]:
        torch.autograd.backward(roots, grads)
        shards = self._input_grads(module, template, tensors, req, variant)
        return shards + self._param_grads(params, req, variant)

    def _output_grads(
        self, outputs: list[Any], req: ReplayRequest, variant: str, device: torch.device
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        roots: list[torch.Tensor] = []
        grads: list[torch.Tensor] = []
        for i, t in enumerate(outputs):
            if not (isinstance(t, torch.Tensor) and t.requires_grad):
                continue
            key = self._key(req, variant, "output_grad", i)
            if self.ctx.feed.has(key):
                roots.append(t)
                grads.append(self.ctx.feed.shard(key, device).to(t.dtype))
            elif self.ctx.feed.own.get(key.with_variant("nominal")) is not None:
                raise AgentError(ErrorCode.NO_REFERENCE_TENSOR, f"the reference has no {key.path}")
        if not roots:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE, f"{req.module}: no output gradient was captured"
            )
        return roots, grads

    def _input_grads(
        self,
        module: nn.Module,
        template: CallTemplate,
        tensors: dict[str, torch.Tensor],
        req: ReplayRequest,
        variant: str,
    ) -> list[Shard]:
        shards: list[Shard] = []
        for slot in template.slots():
            grad = tensors[slot.index].grad
            if grad is None:
                continue
            key = self._key(req, variant, "input_grad", slot.index)
            local, placement = self._input_grad_placement(module, slot.index, grad, key)
            shards.append(shard_entry(key, local, placement, self.ctx.rank))
        return shards

    def _input_grad_placement(
        self, module: nn.Module, index: str, grad: torch.Tensor, key: TensorKey
    ) -> tuple[torch.Tensor, Placement]:
        """The inference's placement, as capture computes it; for a keyword input, whose
        index the inference may not take, the placement this rank's capture recorded."""
        if index.isdigit():
            return self.ctx.inference.activation(module, "in", int(index), grad, gradient=True)
        try:
            return self.ctx.inference.activation(module, "in", index, grad, gradient=True)
        except (TypeError, ValueError):
            own = self.ctx.feed.own.get(key.with_variant("nominal"))
            if own is None:
                raise AgentError(
                    ErrorCode.NOT_REPLAYABLE, f"no placement for the gradient of {key.path}"
                ) from None
            return grad, own.placement

    def _param_grads(
        self, params: list[nn.Parameter], req: ReplayRequest, variant: str
    ) -> list[Shard]:
        """`param_grad` as capture stores it: the accumulated `.grad` after this micro-batch,
        so earlier micro-batches' share comes from the reference's previous `param_grad`."""
        ctx = self.ctx
        shards: list[Shard] = []
        for p in params:
            if p.grad is None:
                continue
            owner, _, _ = ctx.param_id(p)
            local, placement, scale = ctx.inference.parameter(p.grad, p, owner, "param_grad")
            data = local.detach().clone()
            if scale != 1.0:
                data.mul_(scale)
            if req.micro_batch > 0:
                prev = ctx.param_key(p, variant, req.iteration, req.micro_batch - 1, "param_grad")
                place = OwnTensor(
                    placement, tuple(data.shape), str(data.dtype).removeprefix("torch."), False
                )
                data += ctx.feed.shard(prev, data.device, place_as=place)
            key = ctx.param_key(p, variant, req.iteration, req.micro_batch, "param_grad")
            shards.append(shard_entry(key, data, placement, ctx.rank))
        return shards
