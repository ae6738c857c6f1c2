"""The batch rows of a data-parallel rank read from its loader's sampler, and the strided
placement they give (torch's `DistributedSampler` deals rows in turn), without processes."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from ttrace.capture import Layout, ParallelInfo, canonical_names
from ttrace.capture.call_structure import CallStructure
from ttrace.capture.inference import PlacementInference
from ttrace.capture.shard_math import slice_full
from ttrace.integrations.batch_rows import SamplerError, with_sampler_rows

ROWS = torch.arange(16.0).reshape(8, 2)


def loader(**sampler: object) -> DataLoader[tuple[torch.Tensor, ...]]:
    data = TensorDataset(ROWS)
    return DataLoader(data, batch_size=2, sampler=DistributedSampler(data, **sampler))  # type: ignore[arg-type]


def test_a_strided_batch_places_each_row_where_the_sampler_took_it() -> None:
    info = ParallelInfo(dp=2, dp_rank=1, dp_rows="strided")
    inf = PlacementInference(canonical_names([nn.Linear(1, 1)]), info, CallStructure())
    p = inf.from_layout((2, 3, 4), Layout("replica", "bs"), gradient=False)
    assert p.global_shape == (4, 3, 4) and p.combine == "copy"
    assert p.box_spans == (((0, 1, 1), (0, 0, 3), (0, 0, 4)), ((1, 3, 1), (0, 0, 3), (0, 0, 4)))
    # What rank 1's loader hands it is exactly that shard of the one-process batch.
    rows = inf.from_layout((2, 2), Layout("replica", "bs"), gradient=False)
    batch = next(iter(loader(num_replicas=2, rank=1, shuffle=False)))[0]
    assert torch.equal(batch, slice_full(ROWS[:4], rows, (2, 2)))


def test_contiguous_rows_stay_the_default() -> None:
    info = ParallelInfo(dp=2, dp_rank=1)
    inf = PlacementInference(canonical_names([nn.Linear(1, 1)]), info, CallStructure())
    p = inf.from_layout((2, 3, 4), Layout("replica", "bs"), gradient=False)
    assert p.box_spans == (((0, 2, 2), (0, 0, 3), (0, 0, 4)),)
    with pytest.raises(ValueError, match="dp_rows"):
        ParallelInfo(dp_rows="cyclic")


def test_the_sampler_decides_the_rows() -> None:
    info = ParallelInfo(dp=2, dp_rank=1)
    shuffled = loader(num_replicas=2, rank=1, shuffle=True, seed=3)
    assert with_sampler_rows(info, shuffled).dp_rows == "strided"
    assert with_sampler_rows(info, [loader(num_replicas=2, rank=1)]).dp_rows == "strided"
    plain = DataLoader(TensorDataset(ROWS), batch_size=2)
    assert with_sampler_rows(info, plain).dp_rows == "contiguous"


@pytest.mark.parametrize(
    ("made", "code"),
    [
        (lambda: loader(num_replicas=4, rank=1), "replicas"),
        (lambda: loader(num_replicas=2, rank=0), "rank"),
        (lambda: DataLoader(TensorDataset(ROWS), shuffle=True), "shuffled"),
        (
            lambda: {"a": loader(num_replicas=2, rank=1), "b": DataLoader(TensorDataset(ROWS))},
            "samplers_differ",
        ),
    ],
)
def test_a_sampler_no_reference_can_follow_is_refused(made: object, code: str) -> None:
    with pytest.raises(SamplerError) as caught:
        with_sampler_rows(ParallelInfo(dp=2, dp_rank=1), made())  # type: ignore[operator]
    assert caught.value.code == code


def test_rows_that_do_not_split_evenly_are_named() -> None:
    data = TensorDataset(ROWS[:7])
    odd = DataLoader(data, sampler=DistributedSampler(data, num_replicas=2, rank=1))
    with pytest.warns(UserWarning, match="repeats 1 rows at the end of each epoch"):
        with_sampler_rows(ParallelInfo(dp=2, dp_rank=1), odd)
