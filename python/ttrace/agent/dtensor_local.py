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


def shaped_like(target: torch.Tensor, local: torch.Tensor) -> torch.Tensor:
    """`local` as `target` holds it: a DTensor with `target`'s mesh and placements when
    `target` is one, `local` itself otherwise."""
    if not is_dtensor(target):
        return local
    from torch.distributed.tensor import DTensor

    return DTensor.from_local(
        local,
        target.device_mesh,
        target.placements,
        run_check=False,
        shape=target.shape,
        stride=target.stride(),
    )
