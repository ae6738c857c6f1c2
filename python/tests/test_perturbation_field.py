"""The perturbation is layout-independent: every shard of every layout holds, bitwise, its
part of the field a single device draws for the whole tensor (docs/capture.md, "A
distributed reference")."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ttrace.bundle import Placement
from ttrace.capture.errors import TracerError
from ttrace.capture.perturbation import Perturbation, merged_entry, seed_for
from ttrace.capture.perturbation_field import global_indices, uniform_field

SHAPE = (8, 4, 6)  # [s, b, h]
KEY = seed_for(1, 0, 0)


def _dp_tp(dp_rank: int, tp_rank: int) -> Placement:
    """Batch split over dp = 2, hidden over tp = 2."""
    return Placement.boxes(SHAPE, [[(0, 0, 8), (0, 2 * dp_rank, 2), (0, 3 * tp_rank, 3)]])


LAYOUTS: dict[str, list[Placement]] = {
    "tp2 hidden": [Placement.split(SHAPE, 2, r, 2) for r in range(2)],
    "sp2 sequence": [Placement.split(SHAPE, 0, r, 2) for r in range(2)],
    "dp2 x tp2": [_dp_tp(d, t) for d in range(2) for t in range(2)],
    "cp2 two chunks": [Placement.cp_two_chunk(SHAPE, 0, r, 2) for r in range(2)],
    "replicas": [Placement.full(SHAPE, "replica") for _ in range(2)],
    "partial sums": [Placement.full(SHAPE, "sum").with_partial(r) for r in range(2)],
    "flat ranges": [
        Placement.flat(SHAPE, [(0, 0, 100)]),
        Placement.flat(SHAPE, [(0, 100, 92)]),
    ],
}


def _local_shape(p: Placement) -> tuple[int, ...]:
    return (sum(n for _, _, n in p.flat_ranges),) if p.layout == "flat" else p.local_shape()


def _merge(shards: list[tuple[Placement, np.ndarray]]) -> np.ndarray:
    """Each shard's values written at its global indices (replicas overwrite identically)."""
    full = np.full(int(np.prod(SHAPE)), np.nan)
    for p, values in shards:
        full[global_indices(p, values.shape).ravel()] = values.ravel()
    return full.reshape(SHAPE)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_merged_field_is_the_single_device_field_bitwise(layout: str) -> None:
    whole = uniform_field(KEY, Placement.full(SHAPE), SHAPE)
    shards = [(p, uniform_field(KEY, p, _local_shape(p))) for p in LAYOUTS[layout]]
    merged = _merge(shards)
    assert merged.tobytes() == whole.tobytes()
    # Replicas and partial sums: every copy holds the same values.
    if layout in ("replicas", "partial sums"):
        assert shards[0][1].tobytes() == shards[1][1].tobytes()


def test_field_is_uniform_and_depends_on_the_key() -> None:
    big = (64, 64, 32)
    u = uniform_field(KEY, Placement.full(big), big)
    assert u.min() >= -1.0 and u.max() < 1.0
    assert abs(u.mean()) < 0.01 and abs(u.var() - 1 / 3) < 0.01
    other = uniform_field(seed_for(2, 0, 0), Placement.full(big), big)
    assert np.corrcoef(u.ravel(), other.ravel())[0, 1] < 0.01
    # Neighbours are not correlated either (the global index is the counter).
    assert abs(np.corrcoef(u.ravel()[:-1], u.ravel()[1:])[0, 1]) < 0.01


def test_perturbed_shard_is_the_shard_of_the_perturbed_tensor() -> None:
    x = torch.randn(SHAPE, generator=torch.Generator().manual_seed(0))
    pert = Perturbation(count=1)
    whole = pert.apply(x, 1, 3, 1)
    assert not torch.equal(whole, x)
    # Boxes stacked along the sequence: one box (dp x tp) or cp's two chunks.
    for p in LAYOUTS["dp2 x tp2"] + LAYOUTS["cp2 two chunks"]:
        local = torch.cat([x[tuple(slice(gs, gs + n) for _, gs, n in b)] for b in p.box_spans])
        expected = torch.cat(
            [whole[tuple(slice(gs, gs + n) for _, gs, n in b)] for b in p.box_spans]
        )
        assert torch.equal(pert.apply(local, 1, 3, 1, p), expected)


def test_unplaced_elements_are_refused() -> None:
    half = Placement.boxes(SHAPE, [[(0, 0, 4), (0, 0, 4), (0, 0, 6)]])
    pert = Perturbation(count=1, module="embedding")
    with pytest.raises(TracerError, match=r"embedding.*unplaced"):
        pert.apply(torch.zeros(8, 4, 6), 1, 0, 0, half)


def test_ranks_that_perturbed_different_modules_are_refused() -> None:
    entry = {"scheme": "relative-uniform", "relative_scale": 1e-7, "seeds": [1], "module": "a"}
    later_stage = {"scheme": "relative-uniform", "relative_scale": None, "seeds": [1]}
    assert merged_entry([entry, later_stage, dict(entry)]) == entry
    assert merged_entry([later_stage, None]) == later_stage
    with pytest.raises(TracerError, match="rank 0 module='a', rank 2 module='b'"):
        merged_entry([entry, later_stage, {**entry, "module": "b"}])


def test_later_pipeline_stages_never_pick_their_own_first_module() -> None:
    pert = Perturbation(count=1)
    assert not pert.targets("layers.2", first_stage=False)
    assert pert.module is None
    assert pert.targets("embedding", first_stage=True)
    assert not pert.targets("layers.0", first_stage=True)
