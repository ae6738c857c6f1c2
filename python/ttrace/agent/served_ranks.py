"""A rank of a relaunch smaller than the job, replaying several captured ranks in turn.

Each captured rank this rank serves (`relaunch_layout`) gets its own replay context: its own
rank file's placements (the shards it held), the reference feed cut by them, and a placement
inference that knows the captured layout (the job's data-parallel size and this captured
rank's coordinate in it: averaged gradients and per-rank losses are scaled as capture scaled
them). The module runs once per captured rank, with that rank's shards, its groups' ranks
replaying the same captured data-parallel rank at the same time; the shards come back filed
under the captured ranks, so the client merges them exactly like the full job's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ttrace.bundle import TensorKey
from ttrace.capture.dtensor_placement import is_dtensor
from ttrace.capture.inference import PlacementInference

from .errors import AgentError, ErrorCode
from .own_capture import OwnCapture
from .rank_channel import RankChannel
from .rank_gate import Aborted, RankGate
from .rank_worker import RankWorker
from .reference_feed import ReferenceFeed
from .relaunch_layout import RelaunchLayout
from .replay_context import ReplayContext, unique_params
from .replay_request import ReplayRequest
from .shard_codec import error_blob, rank_blob, read_blob


class CapturedRankView:
    """The relaunched tracer as captured rank `rank` saw it: everything is the tracer's own
    but the rank and the placement inference (the captured layout's)."""

    def __init__(self, tracer: Any, rank: int, inference: PlacementInference) -> None:
        self._tracer = tracer
        self.rank = rank
        self.inference = inference

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tracer, name)


def captured_inference(tracer: Any, layout: RelaunchLayout, dp_rank: int) -> Any:
    """The tracer's inference with the job's data-parallel size and the captured rank's
    coordinate in it (the only dimension a relaunch may drop)."""
    info = dataclasses.replace(tracer.parallel, dp=layout.captured.get("dp", 1), dp_rank=dp_rank)
    inference = PlacementInference(tracer.names, info, tracer.calls)
    inference.routing = getattr(tracer.inference, "routing", None)
    return inference


class OwnCaptures:
    """The rank files of every captured rank served, and a reference feed cut by each; closed
    together. Every captured rank gets a feed of its own (whatever a feed keeps per rank it
    serves can never leak into another's shards)."""

    def __init__(self, bundle: Path, reference: Path, ranks: tuple[int, ...]) -> None:
        self.files = [OwnCapture(bundle, r) for r in ranks]
        self.feeds = [ReferenceFeed(reference, own) for own in self.files]

    def close(self) -> None:
        for f in self.files:
            f.close()
        for feed in self.feeds[1:]:  # the first one's reader is closed by `serve` itself
            feed.reader.close()


class ServedRanksWorker:
    """`RankWorker`'s interface (`execute`, `summary`) over several captured ranks."""

    def __init__(
        self, tracer: Any, reference: Path, layout: RelaunchLayout, channel: RankChannel
    ) -> None:
        self.layout = layout
        self.rank = tracer.rank
        self.gate = RankGate(channel, tracer.rank)
        self.own = OwnCaptures(tracer.out_dir, reference, layout.served)
        self.feed = self.own.feeds[0]
        self.workers: list[RankWorker] = []
        served = zip(layout.served, layout.served_dp, self.own.feeds, strict=True)
        for captured, dp_rank, feed in served:
            view = CapturedRankView(tracer, captured, captured_inference(tracer, layout, dp_rank))
            ctx = ReplayContext(view, feed, captured)
            self.workers.append(RankWorker(ctx, self.gate))

    def summary(self) -> dict[str, str]:
        return self.workers[0].summary()  # the same calls on every captured rank served

    def execute(self, req: ReplayRequest) -> bytes:
        """Every rank runs the same sequence (refusal check, then one replay per captured
        rank, stopping together at the first that failed anywhere)."""
        try:
            self.gate.step(lambda: self._refusal(req))
        except Aborted:
            return rank_blob({"rank": self.rank, "aborted": True}, [])
        except AgentError as exc:
            return error_blob(self.rank, exc)
        entries: list[dict[str, Any]] = []
        payloads: list[bytes] = []
        for worker in self.workers:
            blob = worker.execute(req)
            body, data = read_blob(blob)
            if "error" in body or body.get("aborted"):
                return blob
            for entry in body["tensors"]:
                start = entry.pop("offset")
                payloads.append(bytes(data[start : start + entry["bytes"]]))
                entries.append(entry)
        offsets, total = [], 0
        for p in payloads:
            offsets.append(total)
            total += len(p)
        body = {
            "rank": self.rank,
            "tensors": [{**e, "offset": o} for e, o in zip(entries, offsets, strict=True)],
        }
        return rank_blob(body, payloads)

    def _refusal(self, req: ReplayRequest) -> None:
        """Raises `layout_too_small` for what this relaunch cannot replay."""
        if req.phase == "step":
            why = self.layout.dp_shortfall()
            if why:
                raise AgentError(ErrorCode.LAYOUT_TOO_SMALL, why)
            return
        for worker in self.workers:
            self._check_parameters(worker.ctx, req)

    def _check_parameters(self, ctx: ReplayContext, req: ReplayRequest) -> None:
        """The module's parameters must be held here as the captured rank held them: a module
        whose parameters are split over data parallel (FSDP) cannot run without that group."""
        module = ctx.by_name.get(req.module)
        if module is None:
            return
        for p in unique_params(module):
            if p not in ctx.hooks.owner:
                continue
            _, mname, pname = ctx.param_id(p)
            key = TensorKey("nominal", req.iteration, -1, mname, "parameter", pname)
            own = ctx.feed.own.get(key)
            local = p.to_local() if is_dtensor(p) else p
            held = tuple(local.shape) if local.dim() > 0 else (1,)
            if own is not None and held != own.shape:
                raise AgentError(
                    ErrorCode.LAYOUT_TOO_SMALL,
                    f"{req.module}: parameter {mname}.{pname} is held as {list(held)} in this "
                    f"relaunch ({self.layout.relaunched_text}), captured rank {ctx.rank} "
                    f"held {list(own.shape)} ({self.layout.captured_text}): it is split "
                    "over a group this relaunch lacks; relaunch with the job's layout",
                )
