"""Replay of a pipeline hand-off record `<L>@handoff` (docs/capture.md, "Pipelines").

A hand-off runs no module of its own: stage k sends `<L>`'s output and stage k + 1 receives
it (and the gradients back). What it does to a value is what the candidate captured on both
sides: received minus sent (forward), the gradient the sender's backward got minus the one
the receiver computed (backward). A correct hand-off changes nothing, bit for bit. The
replay applies that change to the reference's value of the same place (`<L>`'s output, its
output gradient) and returns it where the candidate filed the received value (the receiving
ranks' `forward_output/0`) and the sender's gradient (the sending ranks' `input_grad/0`), so
the client judges it like any replay: a stage that consumed another value than was sent is
*introduced* at the hand-off, and the next stage's first layer, fed the reference's input,
is *inherited*.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ttrace.bundle import DType, TensorKey
from ttrace.bundle.reader import BundleError, BundleReader

from .errors import AgentError, ErrorCode
from .own_capture import OwnTensor
from .rank_gate import RankGate
from .reference_feed import cut
from .replay_context import ReplayContext
from .replay_request import ReplayRequest
from .replay_rows import Refusal, ReplayRow
from .shard_codec import shard_entry

Shard = tuple[dict[str, Any], bytes]
# (kind the result is filed under, what the candidate's side sent, the reference's kind at L)
_FORWARD = ("forward_output", "forward_input", "forward_output")
_BACKWARD = ("input_grad", "output_grad", "output_grad")


class HandoffReplay:
    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self._candidate: BundleReader | None = None

    def candidate(self) -> BundleReader:
        """The candidate's bundle, merged over ranks: each side of a hand-off lives on
        another stage's ranks."""
        if self._candidate is None:
            self._candidate = BundleReader(self.ctx.tracer.out_dir)
        return self._candidate

    def run(self, req: ReplayRequest, gate: RankGate) -> list[Shard]:
        # Every rank passes the same gate stages as a module replay does (feed, forward, and
        # for backward: output gradients, backward), so a failure on one stops all.
        shards = gate.step(lambda: self._all(req, _FORWARD))
        gate.step(lambda: None)
        if req.phase == "backward":
            shards += gate.step(lambda: self._all(req, _BACKWARD))
            gate.step(lambda: None)
        return shards

    def _all(self, req: ReplayRequest, sides: tuple[str, str, str]) -> list[Shard]:
        out_kind = sides[0]
        own = self.ctx.feed.own.get(self._key(req, "nominal", req.module, out_kind))
        if own is None:
            return []  # this rank holds no side of the hand-off filed under out_kind
        change = self._change(req, sides)
        return [self._shard(req, v, sides, change, own) for v in req.variants]

    def _key(self, req: ReplayRequest, variant: str, module: str, kind: str) -> TensorKey:
        return TensorKey(variant, req.iteration, req.micro_batch, module, kind, "0")

    def _change(self, req: ReplayRequest, sides: tuple[str, str, str]) -> np.ndarray:
        """What the candidate's hand-off did: its output side minus its input side."""
        out_kind, in_kind, _ = sides
        try:
            got = self._merged(req, out_kind)
            given = self._merged(req, in_kind)
        except (BundleError, KeyError, IndexError) as exc:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{req.module}: the candidate's bundle lacks a side of the hand-off ({exc})",
                Refusal.HANDOFF_UNRECORDED,
            ) from exc
        if got.shape != given.shape:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{req.module}: received {list(got.shape)}, sent {list(given.shape)}",
                Refusal.HANDOFF_UNRECORDED,
            )
        return got - given

    def _merged(self, req: ReplayRequest, kind: str) -> np.ndarray:
        key = self._key(req, "nominal", req.module, kind)
        identity = (key.variant, key.iteration, key.micro_batch, key.module, key.kind, key.index)
        if identity not in self.candidate().index():
            raise KeyError(key.path)
        return self.candidate().merged(identity)

    def _shard(
        self,
        req: ReplayRequest,
        variant: str,
        sides: tuple[str, str, str],
        change: np.ndarray,
        own: OwnTensor,
    ) -> Shard:
        layer = ReplayRow.parse(req.module).module
        reference = self.ctx.feed.full(self._key(req, variant, layer, sides[2]))
        want = own.placement.global_shape
        if reference.size != change.size:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{req.module}: the reference's {layer} {sides[2]} has shape "
                f"{list(reference.shape)}, the hand-off {list(change.shape)}",
                Refusal.HANDOFF_UNRECORDED,
            )
        value = reference.reshape(want) + change.reshape(want)
        local = cut(value, own.placement, own.shape)
        dtype = getattr(torch, DType.from_name(own.dtype).name)
        data = torch.from_numpy(local).to(dtype)
        key = self._key(req, variant, req.module, sides[0])
        return shard_entry(key, data, own.placement, self.ctx.rank)
