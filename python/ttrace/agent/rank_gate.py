"""Ranks agree after every stage of a replay whether all of them succeeded.

A replay runs collectives (the module's own all-gathers, the optimizer's reductions); a rank
that failed to prepare (a missing reference tensor) and skipped ahead would leave the others
waiting in a collective forever. So every rank runs the same sequence of stages, each ending
in a one-integer all-reduce: if any rank failed, all stop before the next collective; the
failing rank reports its error, the others report that they were aborted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from .errors import AgentError, ErrorCode
from .rank_channel import RankChannel

T = TypeVar("T")


class Aborted(Exception):
    """Another rank failed at this stage."""


class RankGate:
    def __init__(self, channel: RankChannel, rank: int) -> None:
        self.channel = channel
        self.rank = rank

    def _any(self, failed: bool) -> bool:
        if not self.channel.distributed:
            return failed
        t = torch.tensor([int(failed)], dtype=torch.int64, device=self.channel.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def step(self, fn: Callable[[], T]) -> T:
        error: AgentError | None = None
        result: Any = None
        try:
            result = fn()
        except AgentError as exc:
            error = exc
        except Exception as exc:  # the module (or optimizer) itself raised
            error = AgentError(
                ErrorCode.REPLAY_FAILED, f"rank {self.rank}: {type(exc).__name__}: {exc}"
            )
        failed = self._any(error is not None)
        if error is not None:
            raise error
        if failed:
            raise Aborted()
        return result
