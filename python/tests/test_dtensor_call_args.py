"""A DTensor argument of a captured call (torch's parallel styles and torchtitan pass
activations between modules as DTensors): its template slot keeps the mesh and placements,
the bundle's JSON holds them, and a relaunch finds the mesh again among the job's own
meshes, or says the call cannot be replayed from the bundles."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.testing._internal.distributed.fake_pg import FakeStore

from ttrace.capture.call_record import decode_template, encode_template
from ttrace.capture.call_template import CallTemplate
from ttrace.capture.dtensor_spec import job_meshes


@pytest.fixture
def rank0_of_4() -> Iterator[None]:
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_dtensor_argument_round_trips_through_the_bundle(rank0_of_4: None) -> None:
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    model = nn.Linear(4, 4)
    model.weight = nn.Parameter(distribute_tensor(model.weight.data, mesh, [Shard(0), Shard(0)]))
    x = distribute_tensor(torch.randn(2, 8, 4), mesh["tp"], [Shard(1)])
    template = CallTemplate.of_call((x,), {"flag": True})
    slot = template.slots()[0]
    assert slot.dtensor is not None and slot.dtensor.placements == (Shard(1),)
    decoded = decode_template(encode_template(template, model), model, job_meshes([model]))
    got = decoded.slots()[0]
    assert not decoded.problems and got.dtensor is not None
    assert got.dtensor.mesh.mesh_dim_names == ("tp",) and got.dtensor.placements == (Shard(1),)
    wrapped = got.dtensor.wrap(x.to_local(), got.shape)
    assert wrapped.shape == x.shape and torch.equal(wrapped.to_local(), x.to_local())


def test_every_placement_kind_is_kept(rank0_of_4: None) -> None:
    mesh = init_device_mesh("cpu", (4,), mesh_dim_names=("tp",))
    model = nn.Linear(4, 4)
    model.weight = nn.Parameter(distribute_tensor(model.weight.data, mesh, [Replicate()]))
    for placement in (Shard(0), Replicate(), Partial()):
        x = DTensor.from_local(torch.randn(1, 4), mesh, [placement], run_check=False)
        template = CallTemplate.of_call((x,), {})
        decoded = decode_template(encode_template(template, model), model, job_meshes([model]))
        assert decoded.slots()[0].dtensor.placements == (placement,)


def test_a_mesh_the_relaunch_lacks_is_a_stated_problem(rank0_of_4: None) -> None:
    mesh = init_device_mesh("cpu", (4,), mesh_dim_names=("tp",))
    x = distribute_tensor(torch.randn(4, 4), mesh, [Shard(0)])
    plain = nn.Linear(4, 4)  # holds no DTensor: the relaunch knows no mesh
    data = encode_template(CallTemplate.of_call((x,), {}), plain)
    decoded = decode_template(data, plain, job_meshes([plain]))
    assert (
        decoded.problems
        and "DTensor on the device mesh of ranks [0, 1, 2, 3] (tp)" in (decoded.problems[0])
    )
    assert decoded.why_not_replayable() == decoded.problems[0]
