"""Forward and backward replay of one module with the reference's inputs.

The module gets the reference's parameters of the iteration, its forward inputs (and, for
backward, its output gradients), each cut to this rank's shard; it is called with the
arguments it was called with during capture (its call template), inside the captured
precision recipe. What it returns takes the placement and the scale capture gave the same
tensor id on this rank (`result_placement`), so the client merges replayed shards like
captured ones.

Rows other than a module's call 0 (`replay_rows`): call k of a module run more than once
(`<module>@call<k>`) replays that call's template with the reference's inputs of that call;
a recompute (`<call>@recompute`) replays the call's template with the reference's inputs of
the recompute (a reference that does not recompute: of the call, which a correct recompute
reproduces), its outputs filed under the recompute; a hand-off is `HandoffReplay`'s.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ttrace.bundle import TensorKey
from ttrace.capture.call_template import CallTemplate
from ttrace.capture.module_hooks import flatten, stored_scale

from .call_inference import CallInference
from .dtensor_local import shaped_like
from .errors import AgentError, ErrorCode
from .fsdp_units import GatheredUnit
from .handoff_replay import HandoffReplay
from .own_capture import OwnTensor
from .rank_gate import RankGate
from .replay_context import ReplayContext, device_of, unique_params
from .replay_request import ReplayRequest
from .replay_rows import Refusal, ReplayRow, RowKind
from .shard_codec import shard_entry
from .state_guard import RngState, StateGuard

Shard = tuple[dict[str, Any], bytes]


class ModuleReplay:
    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.handoffs = HandoffReplay(ctx)

    def template(self, req: ReplayRequest) -> CallTemplate | None:
        """The call to replay; None when this rank holds no part of the module."""
        ctx = self.ctx
        row = ReplayRow.parse(req.module)
        if row.module not in ctx.by_name or ctx.recorder.any_template(row.module) is None:
            return None
        template = ctx.recorder.template(row.call, req.iteration, req.micro_batch)
        if template is None:
            reason = Refusal.CALL_NOT_RECORDED if row.kind != RowKind.MODULE else ""
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{row.call} was not captured at iteration {req.iteration} "
                f"micro-batch {req.micro_batch}",
                reason,
            )
        refusal_check(row, req, template)
        return template

    def run(self, req: ReplayRequest, gate: RankGate) -> list[Shard]:
        """Every rank runs the same gate stages, also one that holds no part of the module."""
        if ReplayRow.parse(req.module).kind == RowKind.HANDOFF:
            return self.handoffs.run(req, gate)
        template = gate.step(lambda: self.template(req))
        row = ReplayRow.parse(req.module)
        module = self.ctx.by_name[row.module] if template is not None else None
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

    def _input_key(self, req: ReplayRequest, variant: str, index: str) -> TensorKey:
        """The reference's input of the replayed row: a recompute's own where the reference
        recomputes too, else the inputs of the call it recomputes."""
        key = self._key(req, variant, "forward_input", index)
        row = ReplayRow.parse(req.module)
        if row.kind == RowKind.RECOMPUTE and not self.ctx.feed.has(key):
            return TensorKey(variant, req.iteration, req.micro_batch, row.call, key.kind, index)
        return key

    def _inputs(
        self, template: CallTemplate, req: ReplayRequest, variant: str, device: torch.device
    ) -> dict[str, torch.Tensor]:
        tensors: dict[str, torch.Tensor] = {}
        for slot in template.slots():
            key = self._input_key(req, variant, slot.index)
            if not self.ctx.feed.has(key):
                # Never the candidate's own value instead: that would put it on trial too.
                raise AgentError(
                    ErrorCode.NOT_REPLAYABLE,
                    f"inputs not captured: the reference has no {key.path}",
                )
            # Cut as this rank's capture cut the requested row's own input.
            own = self.ctx.feed.own.get(self._key(req, "nominal", "forward_input", slot.index))
            if own is not None and own.placement.combine == "sum" and not slot.is_float:
                # Counts (tokens per expert over expert-DP) are no sum of shares a module can
                # take: the reference's total on one rank and zeros elsewhere would be wrong.
                raise AgentError(
                    ErrorCode.NOT_REPLAYABLE,
                    f"{key.path}: this rank holds a partial sum of an integer input",
                    Refusal.PARTIAL_INTEGER_INPUT,
                )
            t = self.ctx.feed.shard(key, device, place_as=own)
            if slot.dtensor is not None:
                # A DTensor leaf, not a plain tensor wrapped on the way in: its gradient then
                # keeps the placement autograd gives it (a partial sum, as capture saw it),
                # where a wrap's backward would reduce it first.
                t = slot.dtensor.wrap(t, slot.shape).detach()
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
            for _ in range(6 if req.phase == "backward" else 4):
                gate.step(lambda: None)
            return []
        device = device_of(module)
        unit = GatheredUnit(module, self.ctx.tracer.roots)
        gate.step(unit.settle)
        params = unique_params(module)
        tensors = gate.step(lambda: self._prepare(params, template, req, variant, device))
        try:
            gate.step(unit.gather)
            # Parameters FSDP2 shards: their gradients in the bundle are the gradient
            # reduction's shards, which a module's replay does not make (`fsdp_units`).
            own_grads = params if not unit.shards_parameters else []
            return self._run_call(module, template, tensors, own_grads, req, variant, gate)
        finally:
            unit.release()

    def _run_call(
        self,
        module: nn.Module,
        template: CallTemplate,
        tensors: dict[str, torch.Tensor],
        params: list[nn.Parameter],
        req: ReplayRequest,
        variant: str,
        gate: RankGate,
    ) -> list[Shard]:
        device = device_of(module)
        infer = CallInference(
            self.ctx.inference,
            self.ctx.feed.own,
            module,
            template,
            tensors,
            self._key(req, "nominal", "forward_input", 0),
        )
        outputs, shards = gate.step(
            lambda: self._forward(module, template, tensors, req, variant, infer)
        )
        if req.phase == "backward":
            roots, grads = gate.step(lambda: self._output_grads(outputs, req, variant, device))
            shards += gate.step(
                lambda: self._backward(template, tensors, params, roots, grads, req, variant, infer)
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
        infer: CallInference,
    ) -> tuple[list[Any], list[Shard]]:
        ctx = self.ctx
        args, kwargs = template.bind(tensors)
        before = RngState()
        with torch.enable_grad(), ctx.precision_scope(device_of(module)):
            output = module(*args, **kwargs)
        if not before.same_as(RngState()):
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE, "stochastic: draws random numbers", Refusal.STOCHASTIC
            )
        outputs = flatten(output)
        shards: list[Shard] = []
        first = True
        for i, t in enumerate(outputs):
            if isinstance(t, torch.Tensor):
                key = self._key(req, variant, "forward_output", i)
                primary = first
                data, placement = ctx.placer.place(
                    key, t, lambda i=i, t=t, p=primary: infer.output(i, t, p)
                )
                first = False
                shards.append(shard_entry(key, data, placement, ctx.rank))
        return outputs, shards

    def _backward(
        self,
        template: CallTemplate,
        tensors: dict[str, torch.Tensor],
        params: list[nn.Parameter],
        roots: list[torch.Tensor],
        grads: list[torch.Tensor],
        req: ReplayRequest,
        variant: str,
        infer: CallInference,
    ) -> list[Shard]:
        torch.autograd.backward(roots, grads)
        shards = self._input_grads(template, tensors, req, variant, infer)
        if self._called_once(req):
            return shards + self._param_grads(params, req, variant)
        # A parameter's gradient sums every call of the micro-batch (the bundle has no
        # per-call share of it): the replay of one call is judged by its activations' gradients.
        return shards

    def _called_once(self, req: ReplayRequest) -> bool:
        row = ReplayRow.parse(req.module)
        first = self.ctx.recorder.template(row.module, req.iteration, req.micro_batch)
        return first is None or first.calls == 1

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
                own = self.ctx.feed.own.get(key.with_variant("nominal"))
                partial = own is not None and own.placement.combine == "sum"
                grad = self._fed_output_grad(key, device).to(t.dtype)
                grads.append(shaped_like(t, grad, partial))
            elif self.ctx.feed.own.get(key.with_variant("nominal")) is not None:
                raise AgentError(ErrorCode.NO_REFERENCE_TENSOR, f"the reference has no {key.path}")
        if not roots:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE, f"{req.module}: no output gradient was captured"
            )
        return roots, grads

    def _fed_output_grad(self, key: TensorKey, device: torch.device) -> torch.Tensor:
        """The reference's output gradient as this rank's module saw it in training: capture
        stored it scaled (`stored_scale`: averaged gradients), so the module gets it unscaled
        and what it returns is scaled again like its captured gradients."""
        grad = self.ctx.feed.shard(key, device)
        own = self.ctx.feed.own_tensor(key)
        factor = stored_scale(self.ctx.inference, key.kind, own.placement, tuple(grad.shape))
        return grad / factor if factor != 1.0 else grad

    def _input_grads(
        self,
        template: CallTemplate,
        tensors: dict[str, torch.Tensor],
        req: ReplayRequest,
        variant: str,
        infer: CallInference,
    ) -> list[Shard]:
        shards: list[Shard] = []
        for slot in template.slots():
            grad = tensors[slot.index].grad
            if grad is None:
                continue
            key = self._key(req, variant, "input_grad", slot.index)
            data, placement = self.ctx.placer.place(
                key, grad, lambda i=slot.index, g=grad: infer.input_grad(i, g)
            )
            shards.append(shard_entry(key, data, placement, self.ctx.rank))
        return shards

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
            key = ctx.param_key(p, variant, req.iteration, req.micro_batch, "param_grad")
            local, inferred, scale = ctx.inference.parameter(p.grad, p, owner, "param_grad")
            data, placement = ctx.placer.place(
                key, p.grad, lambda lo=local, pl=inferred: (lo, pl), param_scale=scale
            )
            if req.micro_batch > 0:
                prev = ctx.param_key(p, variant, req.iteration, req.micro_batch - 1, "param_grad")
                place = OwnTensor(
                    placement, tuple(data.shape), str(data.dtype).removeprefix("torch."), False
                )
                data += ctx.feed.shard(prev, data.device, place_as=place)
            shards.append(shard_entry(key, data, placement, ctx.rank))
        return shards


def refusal_check(row: ReplayRow, req: ReplayRequest, template: CallTemplate) -> None:
    """Raises the typed refusal of a row that cannot be replayed faithfully."""
    if row.kind == RowKind.RECOMPUTE and req.phase != "forward":
        raise AgentError(
            ErrorCode.NOT_REPLAYABLE,
            f"{row.name}: its gradients are filed under {row.call}; replay that call's backward",
            Refusal.RECOMPUTE_GRADIENTS,
        )
    why = template.why_not_replayable()
    if not why:
        return
    if template.stochastic:
        recompute = row.kind == RowKind.RECOMPUTE
        raise AgentError(
            ErrorCode.NOT_REPLAYABLE,
            why,
            Refusal.RECOMPUTE_STOCHASTIC if recompute else Refusal.STOCHASTIC,
        )
    raise AgentError(ErrorCode.NOT_REPLAYABLE, why)
