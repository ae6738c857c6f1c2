"""Canonical names, shard math and placement inference, without processes."""

from __future__ import annotations

import torch
from torch import nn

from ttrace.capture import Layout, ParallelInfo, annotate, canonical_names, seeded_init
from ttrace.capture.call_structure import CallStructure
from ttrace.capture.inference import PlacementInference
from ttrace.capture.shard_math import flat_ranges_of_box, two_chunk_indices


class Layer(nn.Module):
    def __init__(self, layer_number: int) -> None:
        super().__init__()
        self.layer_number = layer_number
        self.norm = nn.LayerNorm(4)


class Experts(nn.Module):
    def __init__(self, indices: list[int]) -> None:
        super().__init__()
        self.local_expert_indices = indices
        self.local_experts = nn.ModuleList(nn.Linear(4, 4) for _ in indices)


class Stage(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(3), Layer(4)])
        self.experts = Experts([2, 3])


def column(out: int, inp: int, sp: bool = False) -> nn.Module:
    m = nn.Module()
    m.weight = nn.Parameter(torch.zeros(out, inp))
    m.weight.tensor_model_parallel, m.weight.partition_dim = True, 0
    m.sequence_parallel = sp
    return m


def test_canonical_names_use_global_layer_and_expert_numbers() -> None:
    stage = Stage()
    names = canonical_names([stage])
    got = {names.name(m) for m in stage.modules()}
    assert {"layers.2.norm", "layers.3.norm", "experts.local_experts.3"} <= got
    assert names.name(stage) == "model"
    assert stage.experts.local_experts[1] in names.experts
    assert stage.layers[0] not in names.experts


def test_two_chunk_and_sequence_parallel_boxes() -> None:
    assert two_chunk_indices(16, 0, 2) == [0, 1, 2, 3, 12, 13, 14, 15]
    # cp rank 0 of 2 holds chunks 0 and 3; sequence parallelism gives tp rank 1 chunk 3.
    info = ParallelInfo(tp=2, cp=2, dp=2, tp_rank=1, cp_rank=0, dp_rank=1)
    inf = PlacementInference(canonical_names([nn.Linear(1, 1)]), info, CallStructure())
    p = inf.from_layout((4, 3, 8), Layout("seq"), gradient=False)
    assert p.global_shape == (16, 6, 8) and p.combine == "copy"
    assert p.box_spans == (((0, 12, 4), (0, 3, 3), (0, 0, 8)),)
    # without sp the cp-local sequence is two boxes, replicated over tp
    q = inf.from_layout((8, 3, 8), Layout("replica"), gradient=False)
    assert q.combine == "replica" and len(q.box_spans) == 2
    r = inf.from_layout((8, 3, 4), Layout("sum"), gradient=False)
    assert r.combine == "sum" and r.partial_index == 1
    grad = Layout("sum").for_gradient()  # the gradient of a partial sum is whole
    assert inf.from_layout((8, 3, 4), grad, gradient=True).combine == "replica"


def test_layer_rules_and_composites() -> None:
    info = ParallelInfo(tp=2, tp_rank=0)
    block = nn.Module()
    block.fc1 = column(8, 4, sp=True)
    row = nn.Module()
    row.weight = nn.Parameter(torch.zeros(4, 4))
    row.weight.tensor_model_parallel, row.weight.partition_dim = True, 1
    row.sequence_parallel = True
    block.fc2 = row
    calls = CallStructure()
    for m in (block, block.fc1):
        calls.enter(m)
    calls.exit(block.fc1)
    calls.enter(block.fc2)
    calls.exit(block.fc2)
    inf = PlacementInference(canonical_names([block]), info, calls)
    assert inf.layout(block.fc1, "in", 0).mode == "seq"
    assert inf.layout(block.fc1, "out", 0).mode == "last"
    assert inf.layout(block.fc2, "in", 0).mode == "last"
    assert inf.layout(block, "in", 0).mode == "seq"  # from fc1
    assert inf.layout(block, "out", 0).mode == "seq"  # from fc2
    annotate(block.fc2, inputs="replica", outputs=["sum"])
    assert inf.layout(block.fc2, "out", 0).mode == "sum"


def test_parameter_placements_under_tp_dp_and_sp() -> None:
    info = ParallelInfo(tp=2, dp=2, tp_rank=1, dp_rank=1)
    lin = column(4, 3)
    norm = nn.Module()
    norm.weight = nn.Parameter(torch.ones(3))
    norm.weight.sequence_parallel = True
    inf = PlacementInference(canonical_names([lin]), info, CallStructure())
    p, _ = inf.param_placement(lin.weight, (4, 3), lin, "parameter")
    assert p.global_shape == (8, 3) and p.box_spans[0][0] == (0, 4, 4) and p.combine == "replica"
    g, scale = inf.param_placement(lin.weight, (4, 3), lin, "param_grad")
    assert g.combine == "sum" and g.partial_index == 1 and scale == 1.0
    n, _ = inf.param_placement(norm.weight, (3,), norm, "param_grad")
    assert n.combine == "sum" and n.partial_index == 1 * 2 + 1  # dp-major, then tp
    mean = PlacementInference(
        canonical_names([lin]), ParallelInfo(dp=4, dp_rank=2, grad_reduce="mean"), CallStructure()
    )
    assert mean.param_placement(lin.weight, (4, 3), lin, "param_grad")[1] == 0.25


def test_tied_copy_across_pipeline_stages() -> None:
    """A tied embedding copy on the last stage: captured and seeded under its alias, its
    grad a partial sum over (dp, stage), everything else replicas over the two stages."""
    head = column(4, 3)
    annotate(head.weight, alias="embedding.weight", partial_over="pp")
    info = ParallelInfo(tp=2, pp=2, dp=2, tp_rank=1, pp_rank=1, dp_rank=1)
    inf = PlacementInference(canonical_names([head]), info, CallStructure())
    g, _ = inf.param_placement(head.weight, (4, 3), head, "param_grad")
    assert g.combine == "sum" and g.partial_index == 1 * 2 + 1  # dp-major, then stage
    p, _ = inf.param_placement(head.weight, (4, 3), head, "main_grad")
    assert p.combine == "replica" and p.box_spans[0][0] == (0, 4, 4)
    # first stage: Megatron's attribute means the same; one stage: no effect
    emb = column(4, 3)
    emb.weight.shared_embedding = True
    first = PlacementInference(
        canonical_names([emb]), ParallelInfo(pp=2, pp_rank=0), CallStructure()
    )
    g0, _ = first.param_placement(emb.weight, (4, 3), emb, "param_grad")
    assert g0.combine == "sum" and g0.partial_index == 0
    single = PlacementInference(canonical_names([emb]), ParallelInfo(), CallStructure())
    assert single.param_placement(emb.weight, (4, 3), emb, "param_grad")[0].combine == "copy"
    # seeded under the alias: the copy starts as the tensor it copies
    ref = nn.Module()
    ref.embedding = column(4, 3)
    seeded_init(ref, 7)
    root = nn.Module()
    root.output_layer = head
    used = seeded_init(root, 7)
    assert "embedding.weight" in used and torch.equal(head.weight, ref.embedding.weight)


def test_flat_ranges_of_row_split_parameter() -> None:
    info = ParallelInfo(tp=2, tp_rank=1)
    row = nn.Module()
    row.weight = nn.Parameter(torch.zeros(3, 2))
    row.weight.tensor_model_parallel, row.weight.partition_dim = True, 1
    inf = PlacementInference(canonical_names([row]), info, CallStructure())
    box, _ = inf.param_placement(row.weight, (3, 2), row, "main_grad")
    # local elements 1..4 = (0,1) (1,0) (1,1) (2,0) -> global (0,3) (1,2) (1,3) (2,2) in [3, 4]
    assert flat_ranges_of_box(box, (3, 2), 1, 5) == [(0, 3, 1), (1, 6, 2), (3, 10, 1)]


def test_seeded_init_is_layout_independent() -> None:
    full = column(8, 3)
    seeded_init(full, 7)
    shard = column(4, 3)
    seeded_init(shard, 7, parallel=ParallelInfo(tp=2, tp_rank=1))
    assert torch.equal(shard.weight, full.weight[4:])
    other = column(8, 3)
    seeded_init(other, 8)
    assert not torch.equal(other.weight, full.weight)


def test_dtensor_placements() -> None:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from ttrace.capture.dtensor_placement import dtensor_placement

    dist.init_process_group("fake", store=FakeStore(), rank=3, world_size=4)
    try:
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        local = torch.ones(3, 4)
        t = DTensor.from_local(local, mesh, [Replicate(), Shard(0)], run_check=False)
        _, p = dtensor_placement(t)
        assert p.global_shape == (6, 4) and p.combine == "replica"
        assert p.box_spans == (((0, 3, 3), (0, 0, 4)),)
        s = DTensor.from_local(local, mesh, [Partial(), Shard(1)], run_check=False)
        _, q = dtensor_placement(s)
        assert q.combine == "sum" and q.partial_index == 1 and q.global_shape == (3, 8)
    finally:
        dist.destroy_process_group()


def test_placement_memo_never_serves_a_changed_placement() -> None:
    info = ParallelInfo(tp=2, dp=2, tp_rank=1, dp_rank=1)
    linear = nn.Linear(4, 4)
    inf = PlacementInference(canonical_names([linear]), info, CallStructure())
    seq = inf.from_layout((4, 3, 8), Layout("seq"), gradient=False)
    assert inf.from_layout((4, 3, 8), Layout("seq"), gradient=False) is seq  # memoized
    assert inf.memo.hits == 1
    # Another layout, shape, direction or gradient: built anew, not served from the memo.
    replica = inf.from_layout((4, 3, 8), Layout("replica"), gradient=False)
    assert replica != seq and replica.combine == "replica"
    assert inf.from_layout((4, 3, 6), Layout("seq"), gradient=False).global_shape[2] == 6
    assert inf.from_layout((), Layout("replica"), False, "out").partial_index is not None
    assert inf.from_layout((), Layout("replica"), False, "in").partial_index is None
    # The batch size seen decides whether a batch of 1 is a broadcast.
    before = inf.place((4, 1, 8), Layout("replica"), False)
    inf.facts.batch_local = 3
    after = inf.place((4, 1, 8), Layout("replica"), False)
    assert before[1] == "" and "broadcast" in after[1] and before[0] != after[0]
    # Parameters: attributes are read on every call.
    w = linear.weight
    plain, _ = inf.param_placement(w, tuple(w.shape), linear, "parameter")
    w.tensor_model_parallel, w.partition_dim = True, 0
    split, _ = inf.param_placement(w, tuple(w.shape), linear, "parameter")
    assert plain.global_shape == (4, 4) and split.global_shape == (8, 4)
    w.partition_dim = 1
    assert inf.param_placement(w, tuple(w.shape), linear, "parameter")[0].global_shape == (4, 8)
    grad, _ = inf.param_placement(w, tuple(w.shape), linear, "param_grad")
    assert grad.combine == "sum" and grad.partial_index == 1  # dp rank 1 of 2
    # Another run description empties the memo.
    inf.info = ParallelInfo(tp=1, dp=1)
    assert inf.param_placement(w, tuple(w.shape), linear, "parameter")[0].global_shape == (4, 4)
