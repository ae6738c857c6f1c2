"""Which captured ranks each rank of a relaunch serves, when the relaunch is smaller than the job.

A relaunch (`ttrace serve -- LAUNCH`) may drop data parallelism: a TP2xDP2 job relaunched as
TP2 (`--tp 2 --dp 1`). A module's forward and backward run collectives only over its own
groups (tensor, sequence, context, expert parallel), never over data parallel, so one rank
of the relaunch can replay, in turn, every captured rank that holds its coordinates in those
groups: relaunched data-parallel rank `d` serves the captured ranks whose data-parallel rank
is `d`, `d + dp'`, `d + 2 dp'`, ... (`dp'` the relaunch's data-parallel size). Every rank
serves as many captured ranks, in the same order, so the ranks of one group always replay
the same captured data-parallel rank together. Expert parallelism subdivides data
parallelism (`ep` consecutive data-parallel ranks), so `ep` must divide `dp'`.

Every other parallel size must equal the job's: a module split over a group needs that
group to run its own code (a TP1 relaunch runs the unsplit code path, not the candidate's).
What does need the data-parallel group (the gradient reduction over it, the optimizer step it
feeds) is refused by the agent with `layout_too_small` (`dp_shortfall`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..bundle.layout_text import parallel_layout_text, ranks_text

# Parallel dimensions a relaunch must keep at the job's size.
KEPT = ("tp", "pp", "cp", "ep", "vpp")


class LayoutError(ValueError):
    """This relaunch's layout cannot host the captured job's replays at all."""


@dataclass(frozen=True)
class RelaunchLayout:
    captured: dict[str, int]  # the job's parallel sizes (the manifest's `parallel`)
    relaunched: dict[str, int]  # this relaunch's
    captured_world: int
    relaunched_world: int
    served: tuple[int, ...]  # captured ranks this rank serves, in replay order
    served_dp: tuple[int, ...]  # their data-parallel ranks in the job

    @property
    def captured_text(self) -> str:
        """The captured job's layout in the core's words: "TP2 x DP2, 4 ranks"."""
        return parallel_layout_text(self.captured, self.captured_world)

    @property
    def relaunched_text(self) -> str:
        return parallel_layout_text(self.relaunched, self.relaunched_world)

    @property
    def reduced(self) -> bool:
        return self.relaunched_world != self.captured_world

    def dp_shortfall(self) -> str | None:
        """Why a replay over data parallel cannot run here; None when it can."""
        want, have = self.captured.get("dp", 1), self.relaunched.get("dp", 1)
        if have >= want:
            return None
        return (
            f"gradient reduction over data parallel (and the optimizer step it feeds) needs "
            f"{want} data-parallel ranks; this agent has {have} (relaunched "
            f"{self.relaunched_text}, of the captured {self.captured_text}): "
            "relaunch with the job's data-parallel size to replay it"
        )

    def hello(self) -> dict[str, Any]:
        """The handshake's `relaunch.layout`: what runs next to what was captured."""
        return {
            "captured": {"world_size": self.captured_world, "parallel": dict(self.captured)},
            "relaunched": {"world_size": self.relaunched_world, "parallel": dict(self.relaunched)},
            "ranks_per_rank": len(self.served),
        }


def _coords(record: Mapping[str, Any]) -> dict[str, int]:
    return {k: int(v) for k, v in (record.get("coords") or {}).items()}


def _check_sizes(captured: dict[str, int], mine: dict[str, int], world: int, cworld: int) -> None:
    wrong = [k for k in KEPT if mine.get(k, 1) != captured.get(k, 1)]
    have, want = mine.get("dp", 1), captured.get("dp", 1)
    both = (
        f"the candidate bundle is {parallel_layout_text(captured, cworld)}, this relaunch "
        f"{parallel_layout_text(mine, world)}"
    )
    if wrong:
        names = ", ".join(
            f"{k}={captured.get(k, 1)} (this relaunch {mine.get(k, 1)})" for k in wrong
        )
        raise LayoutError(
            f"{both}: a module split over a group needs that group at "
            f"the job's size, here {names}; relaunch with the job's layout, or drop only data "
            "parallelism (e.g. `--dp 1`)"
        )
    if have > want or want % have or have % mine.get("ep", 1):
        raise LayoutError(
            f"{both}: its data-parallel size {have} must divide the "
            f"job's {want} (and be a multiple of ep={mine.get('ep', 1)})"
        )
    if world * (want // have) != cworld:
        raise LayoutError(
            f"the candidate bundle has {cworld} ranks, this relaunch {world} "
            f"({parallel_layout_text(mine, world)}): with its sizes it should have "
            f"{ranks_text(cworld // (want // have))}"
        )


def _served(ranks: list[dict[str, Any]], coords: dict[str, int], dp: int) -> list[tuple[int, int]]:
    """Captured ranks with `coords` in every kept group and a data-parallel rank congruent to
    ours modulo the relaunch's dp, ordered by their data-parallel rank."""
    out = []
    for record in ranks:
        theirs = _coords(record)
        if all(theirs.get(k, 0) == coords.get(k, 0) for k in KEPT if k != "ep") and (
            theirs.get("dp", 0) % dp == coords.get("dp", 0)
        ):
            out.append((theirs.get("dp", 0), int(record["rank"])))
    return sorted(out)  # (data-parallel rank, rank)


def relaunch_layout(
    manifest: Mapping[str, Any],
    rank: int,
    world: int,
    sizes: Mapping[str, int],
    coords: Mapping[str, int],
) -> RelaunchLayout:
    """The layout of relaunched `rank`, which holds `coords` in a relaunch of `sizes`."""
    captured = {k: int(v) for k, v in manifest["parallel"].items()}
    cworld = int(manifest["world_size"])
    mine = {k: int(v) for k, v in sizes.items()}
    _check_sizes(captured, mine, world, cworld)
    here = {k: int(v) for k, v in coords.items()}
    served = _served(list(manifest["ranks"]), here, mine.get("dp", 1))
    if len(served) * world != cworld:
        raise LayoutError(
            f"rank {rank} of this relaunch holds {here}, which matches captured ranks "
            f"{[r for _, r in served]} of {cworld}: the job's ranks cannot be split evenly "
            "over this relaunch"
        )
    return RelaunchLayout(
        captured, mine, cworld, world, tuple(r for _, r in served), tuple(d for d, _ in served)
    )
