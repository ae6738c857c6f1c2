"""Global expert ids, token ids and token-row placements, without processes (the real
Megatron-core runs are in test_megatron_moe.py)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn

from ttrace.capture import Layout, ParallelInfo, canonical_names
from ttrace.capture.call_structure import CallStructure
from ttrace.capture.errors import TracerError
from ttrace.capture.inference import PlacementInference
from ttrace.capture.token_routing import token_ids
from ttrace.capture.token_rows import TokenRows, expert_layout, rows_placement


class Container(nn.Module):
    """Megatron's `SequentialMLP` shape: a `local_experts` list, no ids of its own."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.num_local_experts = n
        self.local_experts = nn.ModuleList(nn.Linear(4, 4) for _ in range(n))


class MoELayer(nn.Module):
    """Megatron's `MoELayer` shape: the ids two levels above the experts."""

    def __init__(self, ids: list[int] | None) -> None:
        super().__init__()
        if ids is not None:
            self.local_expert_indices = ids
        self.experts = Container(2)


class Block(nn.Module):
    def __init__(self, ids: list[int] | None) -> None:
        super().__init__()
        self.mlp = MoELayer(ids)


def test_expert_ids_are_read_from_the_enclosing_moe_layer() -> None:
    block = Block([2, 3])
    names = canonical_names([block])
    experts = block.mlp.experts.local_experts
    assert [names.name(e) for e in experts] == [
        "mlp.experts.local_experts.2",
        "mlp.experts.local_experts.3",
    ]
    assert names.expert_id[experts[1]] == 3
    assert names.expert_container[experts[0]] is block.mlp.experts
    assert block.mlp.experts not in names.experts


def test_an_expert_list_without_ids_is_an_error_naming_it() -> None:
    # A distributed job (a one-rank group in memory, unless the process already has one).
    own = not dist.is_initialized()
    if own:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with pytest.raises(TracerError, match=r"mlp\.experts\.local_experts"):
            canonical_names([Block(None)])
    finally:
        if own:
            dist.destroy_process_group()


def test_token_ids_follow_the_input_placement() -> None:
    # tp rank 1 of 2 under sequence parallelism, dp rank 1 of 2: [s/2, b/2, h] of [8, 4, h]
    info = ParallelInfo(tp=2, dp=2, tp_rank=1, dp_rank=1, seq_dim=0, batch_dim=1)
    inference = PlacementInference(canonical_names([nn.Linear(1, 1)]), info, CallStructure())
    placement = inference.from_layout((4, 2, 8), Layout("seq"), gradient=False)
    ids = token_ids((4, 2, 8), placement)
    expected = torch.tensor([[s * 4 + b for b in (2, 3)] for s in range(4, 8)])
    assert torch.equal(ids, expected)


def test_rows_of_an_expert_are_placed_in_reference_order() -> None:
    rows = TokenRows(5, (3, 0, 1))
    placement = rows_placement((3, 8), rows, Layout("replica"), (1, 0), gradient=False)
    assert placement.global_shape == (5, 8) and placement.combine == "copy"
    assert {box[0][1] for box in placement.box_spans} == {3, 0}  # runs [3] and [0, 1]
    # Over an expert tensor-parallel group of 2: the first linear's output is split, an
    # expert's input gradient is a partial sum.
    fc1 = nn.Linear(4, 8)
    fc1.weight.partition_dim = 0
    split = rows_placement((3, 4), rows, expert_layout(fc1, "out", 2), (2, 1), False)
    assert split.global_shape == (5, 8)
    grad = rows_placement((3, 4), rows, Layout("gradsum"), (2, 1), gradient=True)
    assert grad.combine == "sum" and grad.partial_index == 1
