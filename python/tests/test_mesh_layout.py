"""Named device meshes (`ParallelInfo.from_mesh`) and DTensor placements composed with the
mesh dimensions a sub-mesh lacks. Meshes are real `DeviceMesh` objects on torch's in-process
"fake" process group (one process stands for one rank of a larger job)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.testing._internal.distributed.fake_pg import FakeStore

from ttrace.bundle import Placement
from ttrace.capture import ParallelInfo
from ttrace.capture.mesh_compose import Outer, compose_activation, compose_parameter
from ttrace.capture.mesh_dims import covered_roles, role_of


@pytest.fixture
def rank3_of_8() -> Iterator[None]:
    dist.init_process_group("fake", store=FakeStore(), rank=3, world_size=8)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_from_mesh_reads_named_dimensions(rank3_of_8: None) -> None:
    names = ("dp_replicate", "dp_shard", "tp")
    mesh = init_device_mesh("cpu", (2, 2, 2), mesh_dim_names=names)
    info = ParallelInfo.from_mesh(mesh, grad_reduce="sum")
    # rank 3 is (0, 1, 1): HSDP's replicate x shard is dp 4, row-major rank 0 * 2 + 1.
    assert (info.dp, info.dp_rank, info.tp, info.tp_rank) == (4, 1, 2, 1)
    assert info.grad_reduce == "sum" and info.world_size == 8
    assert covered_roles(mesh["tp"], info.sizes(), 8) == {"tp"}


def test_unknown_or_missing_names_are_errors(rank3_of_8: None) -> None:
    with pytest.raises(ValueError, match="'experts'"):
        ParallelInfo.from_mesh(init_device_mesh("cpu", (4, 2), mesh_dim_names=("experts", "tp")))
    unnamed = init_device_mesh("cpu", (4, 2))
    with pytest.raises(ValueError, match="no mesh_dim_names"):
        ParallelInfo.from_mesh(unnamed)
    assert role_of("dp_shard_cp") == "dp" and role_of("cp") == "cp" and role_of("pp") == "pp"


def test_activation_on_tp_sub_mesh_gets_its_batch_rows() -> None:
    # [b=2, s=8, h=4] on dp rank 1 of 2, sequence-sharded over tp (rank 1 of 2).
    tp_shard = Placement.boxes((2, 8, 4), [[(0, 0, 2), (0, 4, 4), (0, 0, 4)]])
    placed = compose_activation(tp_shard, Outer(dp=2, dp_rank=1), batch_dim=0, seq_dim=1)
    assert placed.global_shape == (4, 8, 4) and placed.combine == "copy"
    assert placed.box_spans == (((0, 2, 2), (0, 4, 4), (0, 0, 4)),)


def test_strided_batch_rows_compose_with_a_tp_shard() -> None:
    # The same shard when a DistributedSampler dealt the rows: dp rank 1 holds rows 1 and 3.
    tp_shard = Placement.boxes((2, 8, 4), [[(0, 0, 2), (0, 4, 4), (0, 0, 4)]])
    outer = Outer(dp=2, dp_rank=1, dp_rows="strided")
    placed = compose_activation(tp_shard, outer, batch_dim=0, seq_dim=1)
    assert placed.global_shape == (4, 8, 4)
    rows = [box[0] for box in placed.box_spans]
    assert rows == [(0, 1, 1), (1, 3, 1)] and {box[1:] for box in placed.box_spans} == {
        ((0, 4, 4), (0, 0, 4))
    }


def test_partial_and_replicated_activations_stay_so_per_batch() -> None:
    partial = Placement.boxes((2, 8, 4), [[(0, 0, 2), (0, 0, 8), (0, 0, 4)]], "sum", 1)
    placed = compose_activation(partial, Outer(dp=2, dp_rank=1), batch_dim=0, seq_dim=1)
    assert (placed.combine, placed.partial_index) == ("sum", 1)
    assert placed.box_spans[0][0] == (0, 2, 2)
    # No batch dimension (a 1-d tensor): the dp ranks hold copies.
    vector = Placement.boxes((4,), [[(0, 0, 4)]])
    assert compose_activation(vector, Outer(dp=2, dp_rank=0), None, None).combine == "replica"


def test_context_parallel_two_chunk_sequence() -> None:
    # Local sequence of 4 on cp rank 0 of 2 holds positions 0, 1 and 6, 7 of 8.
    whole = Placement.boxes((1, 4, 2), [[(0, 0, 1), (0, 0, 4), (0, 0, 2)]])
    placed = compose_activation(whole, Outer(cp=2, cp_rank=0), batch_dim=0, seq_dim=1)
    assert placed.global_shape == (1, 8, 2)
    assert [box[1] for box in placed.box_spans] == [(0, 0, 2), (2, 6, 2)]


def test_parameters_are_replicas_and_gradients_partials_over_dp() -> None:
    shard = Placement.boxes((8, 4), [[(0, 4, 4), (0, 0, 4)]])
    outer = Outer(dp=2, dp_rank=1)
    assert compose_parameter(shard, outer, partial=False).combine == "replica"
    grad = compose_parameter(shard, outer, partial=True)
    assert (grad.combine, grad.partial_index) == ("sum", 1)
    tp_partial = shard.with_partial(1)
    assert compose_parameter(tp_partial, outer, partial=True).partial_index == 3
    assert compose_parameter(shard, Outer(), partial=True) is shard


def test_an_annotation_refines_a_dtensor_placement(rank3_of_8: None) -> None:
    import torch
    from torch import nn
    from torch.distributed.tensor import DTensor, Shard

    from ttrace.capture import annotate
    from ttrace.capture.call_structure import CallStructure
    from ttrace.capture.inference import PlacementInference
    from ttrace.capture.naming import canonical_names

    mesh = init_device_mesh("cpu", (4, 2), mesh_dim_names=("dp", "tp"))
    module = nn.Identity()
    info = ParallelInfo.from_mesh(mesh, batch_dim=0, seq_dim=1)
    inference = PlacementInference(canonical_names([module]), info, CallStructure())
    local = torch.ones(2, 3)
    out = DTensor.from_local(local, mesh["tp"], [Shard(0)], run_check=False)
    _, placed, _ = inference.activation(module, "out", 0, out)
    # Composed: tp rank 1's rows of dp rank 1's [4, 3] batch block of the [16, 3] tensor.
    assert placed.global_shape == (16, 3) and placed.box_spans[0][0] == (0, 6, 2)
    stated = Placement.boxes((8, 3), [[(0, 2, 2), (0, 0, 3)]], "replica")
    annotate(module, outputs=stated)
    stored, placed, _ = inference.activation(module, "out", 0, out)
    assert placed == stated and not isinstance(stored, DTensor)
