"""The perturbation's random field, the same for every layout.

Element ``i`` (its row-major flat index in the *logical, global* tensor) gets
``u_i = 2 * (splitmix64(key, i) >> 11) * 2**-53 - 1``, uniform in ``[-1, 1)``. A counter-based
generator needs no state: a rank computes the values of exactly the elements its shard holds,
from their global indices (read off the shard's placement), without drawing the rest of the
tensor. So the shards of a distributed reference, merged, hold bitwise the field a single
device draws for the whole tensor, whatever the layout (tensor, sequence, context, data
parallel, replicas and partial sums alike), and no rank ever materializes the global tensor.

SplitMix64 (Steele, Lea, Flood 2014; the seeding generator of java.util.SplittableRandom and
xoshiro): its n-th output from seed ``s`` is ``mix(s + n * 0x9E3779B97F4A7C15)``; here n is the
global index plus one. Arithmetic is on numpy uint64 arrays, which wrap modulo 2**64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ttrace.bundle import Placement

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(key: int, index: np.ndarray) -> np.ndarray:
    z = np.uint64(key) + (index.astype(np.uint64) + np.uint64(1)) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def uniform_at(key: int, index: np.ndarray) -> np.ndarray:
    """u in [-1, 1) (float64, 53 random bits) at the given global flat indices."""
    bits = _splitmix64(key, index) >> np.uint64(11)
    return bits.astype(np.float64) * (2.0 / 2.0**53) - 1.0


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
    return uniform_at(key, global_indices(placement, local_shape))
