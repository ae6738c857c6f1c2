"""What a relaunch from the bundles compares a module's buffers by (`buffer_digest`): a plain
tensor's bytes, and for a DTensor buffer (torchtitan keeps its rotary table as one under TP)
the shard this rank holds, which a relaunch in the same layout builds again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.testing._internal.distributed.fake_pg import FakeStore

from ttrace.capture.replay_record import buffer_digest


@pytest.fixture
def one_rank() -> Iterator[None]:
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_plain_digest_follows_bytes_dtype_and_shape() -> None:
    t = torch.arange(6, dtype=torch.float32)
    assert buffer_digest(t) == buffer_digest(t.clone())
    assert buffer_digest(t) != buffer_digest(t.reshape(2, 3))
    assert buffer_digest(t) != buffer_digest(t.double())
    changed = t.clone()
    changed[3] += 1
    assert buffer_digest(t) != buffer_digest(changed)


def test_dtensor_buffer_is_digested_by_its_local_shard(one_rank: None) -> None:
    mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("tp",))
    full = torch.randn(4, 3)
    for placement in (Shard(0), Replicate()):
        d = distribute_tensor(full, mesh, [placement])
        assert buffer_digest(d) == buffer_digest(d.to_local())
    changed = full.clone()
    changed[0, 0] += 1
    assert buffer_digest(distribute_tensor(full, mesh, [Shard(0)])) != buffer_digest(
        distribute_tensor(changed, mesh, [Shard(0)])
    )
