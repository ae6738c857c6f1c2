"""Placements of tensors whose first dimension is a set of tokens chosen by a router: the
router's outputs ``[tokens, experts]`` and every activation of an expert (its rows are the
tokens dispatched to it).

The reference's order is the one a single device gives: router outputs over the global
tokens ``[s, b]`` flattened (token ``s * B + b``); an expert's rows, the global tokens routed
to it in that order; the experts container's rows, expert after expert. A candidate's rows
are wherever its all-to-all put them (by source rank, then local order): `TokenRows` says,
for each local row, the reference row it is (`token_routing` records it from the job's own
dispatch), so the merge rebuilds the reference's order exactly.

Over an expert's own tensor-parallel group (`expert_tensor_parallel_size`) its tensors are
laid out as Megatron's expert linears declare them; with explicit expert communication (the
dispatcher gathers and reduce-scatters) an expert's input is replicated but its gradient is a
partial sum (`gradsum`), and its output a partial sum.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ttrace.bundle import Placement

from .layout import Layout
from .shard_math import DimMap, placement_from_dims


@dataclass(frozen=True)
class TokenRows:
    """The reference rows (of `size`) that a tensor's local rows are, in order; `replica`:
    other ranks hold the same rows (tokens replicated over tensor parallelism)."""

    size: int
    indices: tuple[int, ...]
    replica: bool = False


def _explicit_comm(module: nn.Module) -> bool:
    return any(getattr(m, "explicit_expert_comm", False) for m in module.modules())


def expert_layout(module: nn.Module, direction: str, ndim: int) -> Layout:
    """The layout over the expert tensor-parallel group of an expert module's tensor."""
    weight = getattr(module, "weight", None)
    dim = getattr(weight, "partition_dim", None) if weight is not None else None
    explicit = _explicit_comm(module)
    if dim == 0:  # column-parallel: the input whole, the output split on its last dim
        if direction == "out":
            return Layout("last")
        return Layout("gradsum" if explicit else "replica")
    if dim == 1:  # row-parallel: the input split, the output a partial sum
        if direction == "in":
            return Layout("last") if ndim >= 2 else Layout("replica")
        return Layout("sum" if explicit else "replica")
    if direction == "in":  # an expert or the container: its first linear's input
        return Layout("gradsum" if explicit else "replica")
    return Layout("sum" if explicit else "replica")


def rows_placement(
    shape: tuple[int, ...],
    rows: TokenRows,
    layout: Layout,
    over: tuple[int, int],
    gradient: bool,
) -> Placement:
    """The placement of a local tensor of `shape` whose first dimension is `rows`, laid out
    as `layout` over a group of `over` = (size, this rank's index) beyond its rows."""
    tp, tp_rank = over
    mode = (layout.for_gradient() if gradient else layout).mode
    dims = [DimMap.of(rows.size, rows.indices)] + [DimMap.whole(n) for n in shape[1:]]
    if mode == "last" and len(shape) >= 2 and tp > 1:
        dims[-1] = DimMap.split(shape[-1], tp_rank, tp)
    if mode == "sum" and tp > 1:
        return placement_from_dims(shape, dims, "sum", tp_rank)
    replicas = rows.replica or (tp > 1 and mode in ("replica", "gradsum"))
    return placement_from_dims(shape, dims, "replica" if replicas else "copy")
