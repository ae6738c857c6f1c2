"""Writing the reference's values into a job's tensors that may be DTensors (torch's
parallel styles, FSDP2, torchtitan): the feed is already cut to this rank's piece, so it
goes into the DTensor's local tensor, and a gradient handed to a DTensor parameter is a
DTensor of the same mesh and placements (the optimizer mixes the two otherwise)."""

from __future__ import annotations

import torch

from ttrace.capture.dtensor_placement import is_dtensor


def local_of(t: torch.Tensor) -> torch.Tensor:
    """What this rank holds of `t`: its local tensor for a DTensor (sharing its storage, so
    writing into it writes the DTensor), `t` itself otherwise."""
    return t.to_local() if is_dtensor(t) else t


def shaped_like(target: torch.Tensor, local: torch.Tensor, partial: bool = False) -> torch.Tensor:
    """`local` as `target` holds it: a DTensor with `target`'s mesh and placements when
    `target` is one, `local` itself otherwise. `partial`: `local` is this rank's share of a
    sum (a gradient captured as a partial sum, fed as the total on one rank and zeros on the
    others), so the dimensions `target` replicates over are partial sums instead."""
    if not is_dtensor(target):
        return local
    from torch.distributed.tensor import DTensor, Partial, Replicate

    placements = tuple(target.placements)
    if partial:
        placements = tuple(Partial() if isinstance(p, Replicate) else p for p in placements)
    return DTensor.from_local(
        local,
        target.device_mesh,
        placements,
        run_check=False,
        shape=target.shape,
        stride=target.stride(),
    )
