"""Turn "which global index does each local index hold, per dimension" into placements.

Every placement inferred by ttrace is a product of per-dimension index maps: a dimension is
whole, an even split, or an explicit list of global indices (context parallelism's two
chunks, possibly further split by sequence parallelism). Runs of consecutive indices become
boxes; their cartesian product over dimensions is the shard's box list.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ttrace.bundle import Placement


@dataclass(frozen=True)
class DimMap:
    """Global size of one dimension and the global index of each local index (None: the
    identity, the dimension is whole)."""

    global_size: int
    indices: tuple[int, ...] | None = None

    @classmethod
    def whole(cls, size: int) -> DimMap:
        return cls(size)

    @classmethod
    def split(cls, local_size: int, part: int, parts: int) -> DimMap:
        if parts == 1:
            return cls(local_size)
        start = part * local_size
        return cls(local_size * parts, tuple(range(start, start + local_size)))

    @classmethod
    def strided(cls, local_size: int, part: int, parts: int) -> DimMap:
        """Every `parts`-th index from `part`: the rows `DistributedSampler` deals to one of
        `parts` ranks (one box per row)."""
        if parts == 1:
            return cls(local_size)
        return cls(local_size * parts, tuple(range(part, local_size * parts, parts)))

    @classmethod
    def dp_rows(cls, local_size: int, part: int, parts: int, rows: str) -> DimMap:
        """A batch dimension split over data parallelism, contiguous or strided
        (`ParallelInfo.dp_rows`)."""
        if rows == "strided":
            return cls.strided(local_size, part, parts)
        return cls.split(local_size, part, parts)

    @classmethod
    def of(cls, global_size: int, indices: Sequence[int]) -> DimMap:
        return cls(global_size, tuple(int(i) for i in indices))

    def then_split(self, part: int, parts: int) -> DimMap:
        """Split this dimension's local indices further into `parts` contiguous pieces."""
        idx = self.indices if self.indices is not None else tuple(range(self.global_size))
        if parts == 1:
            return DimMap(self.global_size, idx)
        n = len(idx) // parts
        return DimMap(self.global_size, idx[part * n : (part + 1) * n])

    def runs(self, local_size: int) -> list[tuple[int, int, int]]:
        if self.indices is None:
            return [(0, 0, local_size)]
        if len(self.indices) != local_size:
            raise ValueError(
                f"dimension maps {len(self.indices)} indices but the local size is {local_size}"
            )
        runs: list[tuple[int, int, int]] = []
        for local, g in enumerate(self.indices):
            if runs and runs[-1][1] + runs[-1][2] == g and runs[-1][0] + runs[-1][2] == local:
                ls, gs, n = runs[-1]
                runs[-1] = (ls, gs, n + 1)
            else:
                runs.append((local, g, 1))
        # No indices (an expert no token was routed to on this rank): one empty run, so the
        # shard is a box of no elements rather than no box at all.
        return runs or [(0, 0, 0)]


def two_chunk_indices(length: int, cp_rank: int, cp_size: int) -> list[int]:
    """Global sequence positions held by cp rank `cp_rank` (chunks r and 2*cp-1-r)."""
    if cp_size == 1:
        return list(range(length))
    c = length // (2 * cp_size)
    second = 2 * cp_size - 1 - cp_rank
    return list(range(cp_rank * c, (cp_rank + 1) * c)) + list(range(second * c, (second + 1) * c))


def placement_from_dims(
    local_shape: Sequence[int],
    dims: Sequence[DimMap],
    combine: str = "copy",
    partial_index: int | None = None,
) -> Placement:
    if len(local_shape) == 0:
        return (
            Placement.full((), combine=combine)
            if partial_index is None
            else Placement.full(()).with_partial(partial_index)
        )
    per_dim = [d.runs(n) for d, n in zip(dims, local_shape, strict=True)]
    boxes = [list(box) for box in itertools.product(*per_dim)]
    return Placement.boxes(
        [d.global_size for d in dims], boxes, combine=combine, partial_index=partial_index
    )


def slice_full(full, placement: Placement, local_shape: Sequence[int]):
    """The local shard of a full tensor (torch or numpy) under a boxes placement."""
    import torch

    local = torch.empty(tuple(local_shape), dtype=full.dtype)
    for box in placement.box_spans:
        dst = tuple(slice(ls, ls + n) for ls, _, n in box)
        src = tuple(slice(gs, gs + n) for _, gs, n in box)
        local[dst] = full[src]
    return local


def flat_ranges_of_box(
    placement: Placement, local_shape: Sequence[int], start: int, end: int
) -> list[tuple[int, int, int]]:
    """Flat ranges (offset into local[start:end], global flat offset, length) for the
    elements [start, end) of a local tensor flattened row-major, whose shard is one box.

    Used for a distributed optimizer's shard of a tensor-parallel parameter: the owned range
    of the flattened local tensor maps to one global run per row segment.
    """
    if len(placement.box_spans) != 1:
        raise ValueError("flat ranges need a single-box parameter placement")
    box = placement.box_spans[0]
    shape = tuple(local_shape) or (1,)
    gshape = placement.global_shape
    idx = np.arange(start, end, dtype=np.int64)
    coords = np.unravel_index(idx, shape)
    gcoords = tuple(c - ls + gs for c, (ls, gs, _) in zip(coords, box, strict=True))
    gflat = np.ravel_multi_index(gcoords, gshape) if len(gshape) else idx
    if gflat.size == 0:
        return []
    breaks = np.nonzero(np.diff(gflat) != 1)[0] + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [gflat.size]])
    return [(int(s), int(gflat[s]), int(e - s)) for s, e in zip(starts, ends, strict=True)]


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)
