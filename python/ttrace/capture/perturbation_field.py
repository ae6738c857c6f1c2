"""The perturbation's random field, the same for every layout.

The field of a tensor of global shape ``S`` is the draw a single device has always made:
``u = 2 * torch.rand(S, generator=torch.Generator().manual_seed(key), dtype=float64) - 1``,
uniform in ``[-1, 1)``, in the *logical, global* tensor's row-major order. A rank of a
distributed reference draws the same global field and keeps the elements its shard holds, read
off the shard's placement by their global flat indices. So the shards of a distributed
reference, merged, hold bitwise the field a single device draws (tensor, sequence, context,
data parallel, replicas and partial sums alike), and a single-process reference's variants
are exactly those of earlier versions: its floors, and every verdict resting on them, stay
as they were. The cost is one float64 draw of the perturbed output's global size per
micro-batch and variant on each rank (the embedding output, once per step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from ttrace.bundle import Placement


def global_indices(placement: Placement, local_shape: Sequence[int]) -> np.ndarray:
    """The global row-major flat index of every element of a local shard (int64, local shape).

    Raises ValueError when the placement leaves a local element unplaced."""
    shape = tuple(int(n) for n in local_shape)
    count = math.prod(shape)
    out = np.full(count, -1, dtype=np.int64)
    if placement.layout == "flat":
        for local, start, n in placement.flat_ranges:
            out[local : local + n] = np.arange(start, start + n, dtype=np.int64)
    else:
        gshape = placement.global_shape
        strides = [math.prod(gshape[d + 1 :]) for d in range(len(gshape))]
        grid = out.reshape(shape or (1,))
        for box in placement.box_spans:
            index = np.zeros(tuple(n for _, _, n in box), dtype=np.int64)
            for d, (_, gs, n) in enumerate(box):
                along = [1] * len(box)
                along[d] = n
                index += (np.arange(gs, gs + n, dtype=np.int64) * strides[d]).reshape(along)
            grid[tuple(slice(ls, ls + n) for ls, _, n in box)] = index
    if count and out.min() < 0:
        raise ValueError(
            f"placement {placement.box_spans or placement.flat_ranges} of global shape "
            f"{placement.global_shape} leaves elements of the local shard {shape} unplaced"
        )
    return out.reshape(shape)


def uniform_field(key: int, placement: Placement, local_shape: Sequence[int]) -> np.ndarray:
    """This shard's part of the global field (float64, the local shape)."""
    generator = torch.Generator().manual_seed(key)
    shape = tuple(int(n) for n in placement.global_shape)
    whole = torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1
    return whole.numpy().reshape(-1)[global_indices(placement, local_shape)]
