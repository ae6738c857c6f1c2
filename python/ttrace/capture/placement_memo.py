"""A memo of placements already built, keyed by everything the placement is built from.

Placement inference runs for every captured tensor of every step, and a training step
captures the same tensors with the same shapes each time. Building a `Placement` (index
maps per dimension, box runs, validation) cost more of the training thread's time than
copying the tensor. The decision (which layout a tensor has) is still taken on every call,
since annotations, producers and attributes may change between steps; only the step from
(shape, layout or parameter attributes, the batch size seen) to a placement is memoized, and
the key holds all of its inputs, so a changed input can never be served a stale placement.
The run's `ParallelInfo` is fixed per memo: a different one empties it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from .expert_groups import ExpertGroups
from .parallel_info import ParallelInfo

MAX_ENTRIES = 1 << 14  # a job with ever-changing shapes must not grow the memo forever


@dataclass(frozen=True)
class ParamSource:
    """What a plain parameter's placement is built from, besides its shape and kind."""

    tp_split: bool
    partition_dim: int
    expert: bool
    tied_across_pp: bool
    sequence_parallel: bool
    # an expert's own groups (expert tensor and data parallel), read from its container
    groups: ExpertGroups | None = None


class PlacementMemo:
    def __init__(self) -> None:
        self._entries: dict[Hashable, Any] = {}
        self._info: ParallelInfo | None = None
        self.hits = 0
        self.misses = 0

    def get(self, info: ParallelInfo, key: Hashable) -> Any:
        """The value stored under `key` for the run described by `info`, or None."""
        if info is not self._info:
            self._entries.clear()
            self._info = info
        hit = self._entries.get(key)
        if hit is None:
            self.misses += 1
        else:
            self.hits += 1
        return hit

    def put(self, key: Hashable, value: Any) -> Any:
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = value
        return value

    def __len__(self) -> int:
        return len(self._entries)
