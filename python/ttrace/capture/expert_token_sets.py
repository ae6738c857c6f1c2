"""Rows of an expert's tensors under expert data parallelism, for a mixture-of-experts layer
that runs its local experts on its own data-parallel rank's tokens and whose dispatch ttrace
does not read (no Megatron-core token dispatcher: `token_routing` covers those), such as the
example's `MoELayer` with ``ep < dp``.

Each expert-data-parallel rank's copy of an expert sees only the tokens of its part of the
batch routed to it, so its rows are not the expert's whole token set: recorded as such, the
copies would each claim a different global shape. The reference (one device) feeds the expert
the global tokens routed to it in the layer's flattened order; when that order is batch-major
and the batch is split over data parallelism in contiguous blocks (`ParallelInfo.dp_rows`
``"contiguous"``), a rank's rows are one contiguous block of it, after the rows of the ranks
before it. Its offset and the global row count need the other ranks' row counts: each rank
puts its count of each captured expert call in the job's key-value store and reads the others'
(the store rather than a collective: it needs no process group, and ranks of other pipeline
stages never wait on it). Each rank then counts itself done on one more key, and the last of
them deletes the call's keys: a long capture leaves nothing behind in the store, which the
job's own rendezvous and collectives keep using. A layer that flattens tokens sequence-major
breaks the block assumption: its experts then diverge from the reference at their first
tensor, they are never merged silently wrong into a clean verdict.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from .capture_state import CaptureState
from .errors import TracerError
from .expert_groups import expert_groups
from .layout import Layout
from .naming import ModuleNames
from .parallel_info import ParallelInfo
from .token_routing import RowsDecision
from .token_rows import TokenRows

log = logging.getLogger("ttrace.capture")


class ExpertTokenSets:
    """Records, per captured call of an expert, its rows among the expert's global tokens
    into `rows` (the dict `TokenRouting.decide` reads)."""

    def __init__(
        self,
        names: ModuleNames,
        info: ParallelInfo,
        state: CaptureState,
        capture_id: str,
        timeout_s: float,
        rows: dict[nn.Module, Any],
    ) -> None:
        self.names, self.info, self.state = names, info, state
        self.prefix = f"ttrace/{capture_id}/expert-rows/"
        self.timeout_s = timeout_s
        self.rows = rows
        self.calls: Counter[nn.Module] = Counter()
        self._handles: list[Any] = []
        self._kept_warned = False

    def applies(self) -> bool:
        info = self.info
        if info.edp <= 1 or info.dp_rows != "contiguous" or not dist.is_initialized():
            return False
        if getattr(dist.distributed_c10d, "_get_default_store", None) is None:
            log.warning("ttrace: this torch exposes no default store: expert rows are not placed")
            return False
        return True

    def install(self) -> None:
        if not self.applies():
            return
        for expert in set(self.names.expert_root.values()):
            container = self.names.expert_container.get(expert)
            if container is not None and expert_groups(container) is not None:
                continue  # Megatron-core: its dispatcher's own ids place the rows
            # Before the capture's own hooks, which place the expert's input with these rows.
            hook = self._hook(expert)
            self._handles.append(expert.register_forward_pre_hook(hook, prepend=True))

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def _hook(self, expert: nn.Module) -> Any:
        def hook(module: nn.Module, args: tuple) -> None:
            self.rows.pop(expert, None)
            x = args[0] if args else None
            if not self.state.in_step or not isinstance(x, torch.Tensor) or x.dim() == 0:
                return
            counts = self._exchange(expert, int(x.shape[0]))
            start = sum(counts[: self.info.edp_rank])
            indices = tuple(range(start, start + int(x.shape[0])))
            # Every tensor-parallel rank runs the expert on the same tokens (replicas).
            rows = TokenRows(sum(counts), indices, replica=self.info.tp > 1)
            self.rows[expert] = RowsDecision(rows, Layout("replica"), (1, 0), True)

        return hook

    def _exchange(self, expert: nn.Module, count: int) -> list[int]:
        """The row counts of this call of `expert` on every expert-data-parallel rank."""
        info, state = self.info, self.state
        self.calls[expert] += 1
        name = self.names.name(expert)
        # The ranks holding the same copy of this expert share the name (its global id
        # and pipeline stage), the tensor- and context-parallel rank and the call.
        key = (
            f"{self.prefix}{state.iteration}/{state.variant}/{name}/{self.calls[expert]}/"
            f"{info.tp_rank}.{info.cp_rank}/"
        )
        store = dist.distributed_c10d._get_default_store()
        store.set(key + str(info.edp_rank), str(count))
        keys = [key + str(r) for r in range(info.edp)]
        try:
            store.wait(keys, timedelta(seconds=self.timeout_s))
        except (RuntimeError, dist.DistError) as exc:
            missing = [r for r in range(info.edp) if not store.check([keys[r]])]
            raise TracerError(
                f"ttrace: expert {name}: expert-data-parallel ranks {missing} never reported "
                f"their row count of call {self.calls[expert]} within {self.timeout_s:g} s"
            ) from exc
        counts = [int(store.get(k)) for k in keys]
        # Every rank adds itself once it has read all counts: the last one to do so knows
        # no rank reads these keys again.
        if store.add(key + "read", 1) == info.edp:
            self._delete(store, [*keys, key + "read"])
        return counts

    def _delete(self, store: Any, keys: list[str]) -> None:
        try:
            for k in keys:
                store.delete_key(k)
        except (RuntimeError, NotImplementedError) as exc:  # a store that cannot delete
            if not self._kept_warned:
                log.warning("ttrace: the job's store keeps the expert row counts: %s", exc)
                self._kept_warned = True
