"""A DTensor's placement composed with the job's mesh dimensions its own mesh lacks.

A DTensor on the tensor-parallel sub-mesh of a `(dp, tp)` mesh describes its shard of the
tensor *this data-parallel rank* holds; the data-parallel ranks hold different batches (an
activation) or copies (a parameter) or partial sums (a gradient before its reduction). The
composition adds that outer layer:

- activations: the batch dimension is split over dp, the sequence dimension over cp (in the
  job's context-parallel layout); a tensor with neither is a replica over them;
- parameters, optimizer state, main gradients: replicas over dp x cp;
- per-micro-batch parameter gradients (FSDP2's unsharded DTensor parameters): partial sums
  over dp x cp, scaled by 1 / (dp x cp) when the job averages gradients.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttrace.bundle import Placement

from .shard_math import DimMap, placement_from_dims, two_chunk_indices


@dataclass(frozen=True)
class Outer:
    """The job's data- and context-parallel coordinates a DTensor's mesh does not span."""

    dp: int = 1
    dp_rank: int = 0
    cp: int = 1
    cp_rank: int = 0
    cp_layout: str = "two_chunk"
    dp_rows: str = "contiguous"  # or "strided" (`ParallelInfo.dp_rows`)

    @property
    def parts(self) -> int:
        return self.dp * self.cp

    @property
    def index(self) -> int:
        return self.dp_rank * self.cp + self.cp_rank


def _box(placement: Placement) -> tuple[tuple[int, int, int], ...]:
    if placement.layout != "boxes" or len(placement.box_spans) != 1:
        raise ValueError(f"a DTensor placement is one box, got {placement}")
    return placement.box_spans[0]


def _seq_indices(outer: Outer, local_global: int) -> list[int]:
    total = local_global * outer.cp
    if outer.cp_layout == "two_chunk":
        return two_chunk_indices(total, outer.cp_rank, outer.cp)
    return list(range(outer.cp_rank * local_global, (outer.cp_rank + 1) * local_global))


def compose_activation(
    placement: Placement, outer: Outer, batch_dim: int | None, seq_dim: int | None
) -> Placement:
    """`placement` (a DTensor activation's, in this dp rank's coordinates) in the job's."""
    if outer.parts == 1:
        return placement
    box = _box(placement)
    ndim = len(box)
    by_dp = outer.dp > 1 and batch_dim is not None and batch_dim < ndim
    by_cp = outer.cp > 1 and seq_dim is not None and seq_dim < ndim
    dims: list[DimMap] = []
    for d, ((_, start, n), size) in enumerate(zip(box, placement.global_shape, strict=True)):
        own = range(start, start + n)
        if d == batch_dim and by_dp:
            rows = DimMap.dp_rows(size, outer.dp_rank, outer.dp, outer.dp_rows).indices
            dims.append(DimMap.of(size * outer.dp, [rows[i] for i in own]))  # type: ignore[index]
        elif d == seq_dim and by_cp:
            positions = _seq_indices(outer, size)
            dims.append(DimMap.of(size * outer.cp, [positions[i] for i in own]))
        else:
            dims.append(DimMap.of(size, list(own)))
    combine, partial = placement.combine, placement.partial_index
    # A dimension the outer ranks do not split: they hold copies of the same values.
    if (outer.dp > 1 and not by_dp) or (outer.cp > 1 and not by_cp):
        combine = "replica" if combine == "copy" else combine
    local_shape = [n for _, _, n in box]
    return placement_from_dims(local_shape, dims, combine, partial)


def compose_parameter(placement: Placement, outer: Outer, partial: bool) -> Placement:
    """A parameter-shaped DTensor's placement over the job: replicas over dp x cp, or (a
    per-micro-batch gradient, `partial`) partial sums over them."""
    if outer.parts == 1:
        return placement
    if not partial:
        return placement.with_combine("replica") if placement.combine == "copy" else placement
    inner = placement.partial_index if placement.combine == "sum" else 0
    return placement.with_partial((inner or 0) * outer.parts + outer.index)
