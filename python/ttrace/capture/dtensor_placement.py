"""DTensor placements (Shard / Replicate / Partial over a device mesh) as bundle placements.

The local shard is one box at the offset torch itself computes (uneven and nested shards
included). Partial mesh dimensions make the shard a partial sum whose index is this rank's
coordinate over those dimensions; other mesh dimensions that replicate make it a replica.
"""

from __future__ import annotations

import torch

from ttrace.bundle import Placement


def is_dtensor(t: object) -> bool:
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # torch built without distributed
        return False
    return isinstance(t, DTensor)


def dtensor_placement(t: torch.Tensor) -> tuple[torch.Tensor, Placement]:
    from torch.distributed.tensor import Partial, Replicate
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    mesh, placements = t.device_mesh, t.placements
    local = t.to_local()
    global_shape = tuple(t.shape)
    local_shape, offset = compute_local_shape_and_global_offset(global_shape, mesh, placements)
    coord = mesh.get_coordinate() or [0] * mesh.ndim
    box = [(0, int(o), int(n)) for o, n in zip(offset, local_shape, strict=True)]
    partial_index, replicated = None, False
    for dim, p in enumerate(placements):
        size = mesh.size(dim)
        if isinstance(p, Partial):
            partial_index = (partial_index or 0) * size + coord[dim]
        elif isinstance(p, Replicate) and size > 1:
            replicated = True
    if not global_shape:
        box = [(0, 0, 1)]
        global_shape = (1,)
    if partial_index is not None:
        return local, Placement.boxes(global_shape, [box], "sum", partial_index)
    return local, Placement.boxes(global_shape, [box], "replica" if replicated else "copy")
