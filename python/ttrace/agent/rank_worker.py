"""What every rank does with a command: run the replay, pack its shards (or its error)."""

from __future__ import annotations

import logging

from ttrace.bundle import TensorKey

from .errors import AgentError, ErrorCode
from .module_replay import ModuleReplay
from .rank_gate import Aborted, RankGate
from .replay_context import ReplayContext
from .replay_request import ReplayRequest
from .replay_rows import special_rows
from .shard_codec import error_blob, rank_blob, tensors_blob
from .step_replay import StepReplay

log = logging.getLogger("ttrace.agent")


class RankWorker:
    def __init__(self, ctx: ReplayContext, gate: RankGate) -> None:
        self.ctx = ctx
        self.gate = gate
        self.modules = ModuleReplay(ctx)
        self.step = StepReplay(ctx)

    def execute(self, req: ReplayRequest) -> bytes:
        rank = self.ctx.rank
        try:
            if req.phase == "step":
                shards = self.step.run(req, self.gate)
            else:
                shards = self.modules.run(req, self.gate)
            return tensors_blob(rank, shards)
        except Aborted:
            return rank_blob({"rank": rank, "aborted": True}, [])
        except AgentError as exc:
            return error_blob(rank, exc)
        except Exception as exc:  # outside the gated stages: still an answer, not a crash
            log.exception("ttrace agent: replay failed on rank %d", rank)
            return error_blob(
                rank,
                AgentError(ErrorCode.REPLAY_FAILED, f"rank {rank}: {type(exc).__name__}: {exc}"),
            )

    def summary(self) -> dict[str, str]:
        """Why each module this rank called cannot be replayed ("" when it can), judged
        from its first recorded call and the reference's nominal inputs."""
        out: dict[str, str] = {}
        for name in self.ctx.recorder.call_names():
            (iteration, mb), template = self.ctx.recorder.any_template(name)
            why = template.why_not_replayable()
            for slot in template.slots() if not why else []:
                key = f"/nominal/iter_{iteration}/mb_{mb}/{name}/forward_input/{slot.index}"
                if not self.ctx.feed.has(TensorKey.from_path(key)):
                    why = f"inputs not captured: the reference has no {key}"
                    break
            out[name] = why
        out.update(special_rows(self.ctx.tracer.out_dir, out))
        return out
