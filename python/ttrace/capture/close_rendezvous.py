"""`close()`'s wait for every rank, bounded in time.

`close()` gathers every rank's record on rank 0 with `all_gather_object`, which waits for a
rank that was killed (the OOM killer, a failed node) until the process group's own timeout
(30 minutes on gloo) or forever. Before it, each rank says in the job's key-value store that
it reached `close()` and waits, at most `collective_timeout_s`, until every rank has said
so; a rank that has not is named (with what its status record says it holds) and the gather
is skipped, so no rank of ttrace's own collective hangs on a dead one.

The wait goes through the store rather than a collective because a store key says *which*
rank is missing, and a wait on it ends at its timeout whatever the backend.
"""

from __future__ import annotations

import contextlib
import logging
import os
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist

from ttrace.bundle.rank_status import read_status, status_file_name

from .errors import TracerError

log = logging.getLogger("ttrace.capture")

TIMEOUT_ENV = "TTRACE_COLLECTIVE_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 600.0


def collective_timeout(option: float | None) -> float:
    """Seconds: the Tracer option, else $TTRACE_COLLECTIVE_TIMEOUT_S, else 600."""
    if option is not None:
        value = float(option)
    else:
        text = os.environ.get(TIMEOUT_ENV, "")
        try:
            value = float(text) if text else DEFAULT_TIMEOUT_S
        except ValueError:
            raise TracerError(
                f"ttrace: {TIMEOUT_ENV}={text!r} is not a number of seconds"
            ) from None
    if not value > 0:
        raise TracerError(f"ttrace: the collective timeout must be positive, got {value}")
    return value


class RanksMissing(TracerError):
    """Ranks that did not reach `close()` within the collective timeout (`ranks`)."""

    code = "ranks_missing"

    def __init__(self, message: str, ranks: list[int]) -> None:
        super().__init__(message)
        self.ranks = ranks


def wait_for_ranks(
    capture_id: str, rank: int, world_size: int, timeout_s: float, bundle_dir: Path
) -> None:
    """Announce that `rank` reached close(); return once every rank has, or raise
    RanksMissing naming those that did not within `timeout_s`.

    One outcome for all: the last rank to arrive sets it to "ok", a rank whose wait timed
    out to "failed", by compare-and-set, so no rank goes on to the gather while another has
    given up (a rank arriving after that gives up too)."""
    keys = _Keys(capture_id)
    default_store = getattr(dist.distributed_c10d, "_get_default_store", None)
    if default_store is None:  # a torch without it: the gather waits as long as the group
        log.warning("ttrace: this torch exposes no default store; close() cannot time out")
        return
    try:
        store = default_store()
        store.set(keys.arrived(rank), b"1")
        if store.add(keys.count, 1) == world_size:
            store.compare_set(keys.outcome, "", "ok")
        # Timed out: "failed", unless the last rank decided "ok" meanwhile (compare_set).
        with contextlib.suppress(RuntimeError, dist.DistError):
            store.wait([keys.outcome], timedelta(seconds=timeout_s))
        if store.compare_set(keys.outcome, "", "failed") == b"ok":
            return
        missing = [r for r in range(world_size) if not store.check([keys.arrived(r)])]
        store.set(keys.ack(rank), b"1")
        if rank == 0:
            _let_others_read(store, keys, world_size, missing, timeout_s)
    except (RuntimeError, dist.DistError) as exc:
        # The store lives in the launcher (torchrun) or in rank 0's process (env://).
        raise RanksMissing(
            f"ttrace: rank {rank}: close() cannot reach the job's key-value store "
            f"({_first_line(exc)}): the process that holds it (rank 0, without torchrun) "
            "is gone; manifest.json not written",
            [0],
        ) from exc
    raise RanksMissing(_message(rank, missing, timeout_s, bundle_dir), missing)


class _Keys:
    """This capture's keys in the job's store (the capture id keeps captures apart)."""

    def __init__(self, capture_id: str) -> None:
        self.prefix = f"ttrace/{capture_id}/close/"
        self.count, self.outcome = self.prefix + "count", self.prefix + "outcome"

    def arrived(self, rank: int) -> str:
        return f"{self.prefix}arrived/{rank}"

    def ack(self, rank: int) -> str:
        return f"{self.prefix}ack/{rank}"


def _let_others_read(
    store: dist.Store, keys: _Keys, world_size: int, missing: list[int], timeout_s: float
) -> None:
    """Rank 0's process may hold the store (env:// without torchrun): before it raises and
    exits, wait (bounded) until every rank still there has read what it needs."""
    present = [keys.ack(r) for r in range(1, world_size) if r not in missing]
    if present:
        with contextlib.suppress(RuntimeError, dist.DistError):
            store.wait(present, timedelta(seconds=timeout_s))


def _first_line(exc: BaseException) -> str:
    """torch's store errors carry a C++ backtrace after their first line."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _message(rank: int, missing: list[int], timeout_s: float, bundle_dir: Path) -> str:
    names = ", ".join(str(r) for r in missing)
    plural = "s" if len(missing) > 1 else ""
    waited = (
        f"waiting for rank{plural} {names} (killed, or still busy: never reached close())"
        if missing
        else "(every rank arrived, but only after another rank had given up)"
    )
    lines = [
        f"ttrace: rank {rank}: close() gave up after {timeout_s:g} s {waited}; this rank's "
        f"file is closed and intact; manifest.json not written: `ttrace validate {bundle_dir}` "
        f"names what is usable and `ttrace diff --partial REF {bundle_dir}` compares it"
    ]
    for r in missing:
        lines.append(f"  rank {r}: {_last_record(bundle_dir, r)}")
    return "\n".join(lines)


def _last_record(bundle_dir: Path, rank: int) -> str:
    """What a missing rank's status record says it holds (the bundle is usually shared)."""
    path = bundle_dir / status_file_name(rank)
    try:
        record = read_status(path)
    except (OSError, ValueError):
        return f"no readable status record ({path.name})"
    last = record.get("last_tensor") or "nothing yet"
    steps = ", ".join(f"{v} {i}" for v, i in record.get("steps_done", [])) or "none"
    return (
        f"its status record says {record.get('state')}, {record.get('tensors')} tensors on "
        f"disk, last {last}, steps finished: {steps}"
    )
