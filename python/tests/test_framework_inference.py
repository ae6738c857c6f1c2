"""Placement inference for models written the way framework users write them, in one process:
keyword inputs, Hugging Face names, batch-first detection, gradient conventions, 0-d inputs,
Megatron-style hints on the weight only, and the per-tensor notes when inference falls back."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest
import torch
from torch import nn

from ttrace.capture import ParallelInfo, PlacementInference, Tracer, canonical_names
from ttrace.capture.call_structure import CallStructure
from ttrace.capture.layout import Layout
from ttrace.capture.run_order import activation_order


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, hidden_states: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return self.proj(hidden_states) * scale


class Inner(nn.Module):
    """Hugging Face's shape: ids by keyword, a child called `layers`."""

    def __init__(self) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(16, 8)
        self.layers = nn.ModuleList([Attention()])
        self.act = nn.SiLU()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(hidden_states=h, scale=torch.tensor(0.5))
        return self.act(h)


class ForCausalLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.model = Inner()
        self.lm_head = nn.Linear(8, 16, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(input_ids=input_ids))


def datasets(bundle: Path, rank: int = 0) -> dict[str, h5py.Dataset]:
    out: dict[str, dict] = {}
    with h5py.File(bundle / f"rank-{rank:05d}.h5", "r") as f:
        f.visititems(
            lambda n, o: (
                out.__setitem__(n, dict(o.attrs) | {"data": o[()]})
                if isinstance(o, h5py.Dataset)
                else None
            )
        )
    return out


def run(out: Path, parallel: ParallelInfo | None = None, world: int = 1) -> dict[str, dict]:
    model = ForCausalLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    role = "reference" if world == 1 else "candidate"
    # The last rank of a one-process "world": it writes its rank file but, not being rank 0,
    # no manifest (which would need every rank's record).
    rank = world - 1
    tracer = Tracer(model, opt, out, role=role, parallel=parallel, rank=rank, world_size=world)
    ids = torch.arange(8).reshape(2, 4)
    with tracer.step(0):
        model(input_ids=ids).square().mean().backward()
        opt.step()
    tracer.close()
    return datasets(out, rank)


def test_root_with_a_child_called_model_keeps_names_apart() -> None:
    names = canonical_names([ForCausalLM()])
    by_name = {v: type(k).__name__ for k, v in names.names.items()}
    assert by_name["root"] == "ForCausalLM" and by_name["model"] == "Inner"
    assert by_name["model.layers.0.proj"] == "Linear" and by_name["lm_head"] == "Linear"
    assert len(by_name) == len(names.names)  # no two modules share a name


def test_keyword_inputs_are_captured_under_their_keyword(tmp_path: Path) -> None:
    got = run(tmp_path / "b")
    prefix = "nominal/iter_0/mb_0"
    assert f"{prefix}/model/forward_input/input_ids" in got
    assert f"{prefix}/model.layers.0/forward_input/hidden_states" in got
    assert f"{prefix}/model.layers.0/input_grad/hidden_states" in got
    assert f"{prefix}/model.layers.0/forward_input/scale" in got


def test_batch_first_detected_and_batch_split_over_dp(tmp_path: Path) -> None:
    model = ForCausalLM()
    assert activation_order(ParallelInfo(), canonical_names([model]).names) == "bs"
    assert activation_order(ParallelInfo(seq_dim=0, batch_dim=1), [model]) == "sb"
    with pytest.raises(ValueError, match="seq_dim"):
        ParallelInfo(seq_dim=0, batch_dim=0)
    got = run(tmp_path / "b", ParallelInfo(dp=2, dp_rank=1, grad_reduce="sum"), world=2)
    h = got["nominal/iter_0/mb_0/model.layers.0/forward_input/hidden_states"]
    # [b, s, h] with b split over dp: rank 1 holds rows 2..3 of 4
    assert list(h["global_shape"]) == [4, 4, 8] and h["boxes"].tolist() == [
        [0, 2, 2, 0, 0, 4, 0, 0, 8]
    ]


def test_zero_dim_input_is_a_replica_and_mean_rescales_every_gradient(tmp_path: Path) -> None:
    ref = run(tmp_path / "ref")
    got = run(tmp_path / "mean", ParallelInfo(dp=2, dp_rank=1, grad_reduce="mean"), world=2)
    scale = got["nominal/iter_0/mb_0/model.layers.0/forward_input/scale"]
    assert scale["combine"] == "replica" and "partial_index" not in scale
    for key in ("model.layers.0/output_grad/0", "model.layers.0/input_grad/hidden_states"):
        cand = got[f"nominal/iter_0/mb_0/{key}"]["data"]
        full = ref[f"nominal/iter_0/mb_0/{key}"]["data"]
        # The same rows as the reference: the per-rank-mean gradient is stored halved
        # (exactly), the rank's share of a global mean over dp = 2 ranks.
        assert (cand * 2 == full).all()
        assert got[f"nominal/iter_0/mb_0/{key}"]["combine"] == "copy"
    grad = "nominal/iter_0/mb_0/model.layers.0.proj/param_grad/weight"
    assert (got[grad]["data"] * 2 == ref[grad]["data"]).all()


def test_weight_only_sequence_parallel_norm_and_plain_embedding() -> None:
    info = ParallelInfo(tp=2, tp_rank=1)
    model = nn.Module()
    model.norm = nn.LayerNorm(8)
    model.norm.weight.sequence_parallel = True  # Megatron's mark, on the weight only
    model.embed = nn.Embedding(16, 8)
    inf = PlacementInference(canonical_names([model]), info, CallStructure())
    assert inf.order == "sb"  # Megatron-style attributes: [s, b, h]
    assert inf.layout(model.norm, "out", 0).mode == "seq"
    assert inf.layout(model.embed, "in", 0) == Layout("replica", "bs")
    assert inf.layout(model.embed, "out", 0) == Layout("replica", "bs")
    p = inf.from_layout((2, 4, 8), Layout("replica", "bs"), gradient=False)
    assert p.global_shape == (2, 4, 8) and p.combine == "replica"
    # An embedding outside sequence parallelism (weight marked for the gradient all-reduce):
    # replicated forward, partial-sum gradient.
    model.embed.weight.sequence_parallel = True
    inf = PlacementInference(canonical_names([model]), info, CallStructure())
    out = inf.layout(model.embed, "out", 0)
    assert out == Layout("gradsum", "bs")
    assert inf.from_layout((2, 4, 8), out, gradient=False).combine == "replica"
    grad = inf.from_layout((2, 4, 8), out.for_gradient(), gradient=True)
    assert grad.combine == "sum" and grad.partial_index == 1


def test_marked_parameter_handed_to_a_module_is_split_like_the_parameter() -> None:
    """An attention sink's per-head offset: a 1-d Parameter Megatron marks tensor-parallel,
    given to the softmax as an argument, is split over tp like the parameter (its gradient
    there a partial sum over dp); unmarked, nothing declares it and it stays a replica."""
    info = ParallelInfo(tp=2, tp_rank=1, dp=2, dp_rank=1)
    model = nn.Module()
    model.softmax = nn.Softmax(-1)
    model.offset = nn.Parameter(torch.zeros(2))
    inf = PlacementInference(canonical_names([model]), info, CallStructure())
    _, unmarked, _ = inf.activation(model.softmax, "in", 2, model.offset)
    assert unmarked.global_shape == (2,) and unmarked.combine == "replica"
    model.offset.tensor_model_parallel = True
    model.offset.partition_dim = 0
    _, placed, decided = inf.activation(model.softmax, "in", 2, model.offset)
    assert (placed.global_shape, placed.combine, placed.source) == ((4,), "replica", "declared")
    _, grad, _ = inf.activation(
        model.softmax, "in", 2, torch.zeros(2), gradient=True, decided=decided
    )
    assert (grad.global_shape, grad.combine, grad.partial_index) == ((4,), "sum", 1)


class Unknown(nn.Module):
    """Float activations straight from the program: nothing says how they are laid out."""

    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


def test_fallback_notes_say_what_was_tried_and_how_to_fix_it(tmp_path: Path) -> None:
    got = run(tmp_path / "b", ParallelInfo(tp=2, tp_rank=1), world=2)
    kw = got["nominal/iter_0/mb_0/model.layers.0/forward_input/hidden_states"]
    # the embedding's output (a plain nn.Embedding: a replica) decides, no note; so do
    # replicated inputs for a module without tensor-parallel parameters
    assert "layout_note" not in kw and kw["combine"] == "replica"
    out = got["nominal/iter_0/mb_0/model.layers.0.proj/forward_output/0"]
    assert "layout_note" not in out and out["combine"] == "replica"
    model = Unknown()
    tracer = Tracer(model, None, tmp_path / "u", parallel=ParallelInfo(tp=2, tp_rank=1),
                    rank=1, world_size=2)  # fmt: skip
    with tracer.step(0):
        model(torch.ones(2, 4, 8, requires_grad=True)).sum().backward()
    tracer.close()
    got_u = datasets(tmp_path / "u", 1)
    out = got_u["nominal/iter_0/mb_0/block.0/forward_output/0"]
    assert out["combine"] == "replica"
    assert out["layout_note"].startswith("inferred replica over tp")
    assert "local [2, 4, 8]" in out["layout_note"]
    assert out["annotate_hint"] == 'ttc.annotate(model.get_submodule("block.0"), outputs="last")'
    grad = got_u["nominal/iter_0/mb_0/block.0/output_grad/0"]
    assert grad["layout_note"] == out["layout_note"]
    param = got["nominal/iter_0/mb_all/model.layers.0.proj/parameter/weight"]
    assert "not a DTensor" in param["layout_note"]
    assert param["annotate_hint"].startswith('ttc.annotate(model.get_parameter("model.layers.0.')


@pytest.fixture
def one_rank_group(tmp_path: Path):
    """A real one-rank gloo group (DeviceMesh and the TP styles need one), torn down after."""
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_tensor_parallel_styles_are_read_back(one_rank_group: None) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    from ttrace.capture.tp_styles import module_style

    mesh = init_device_mesh("cpu", (1,))
    model = nn.Module()
    model.up = nn.Linear(8, 16)
    model.down = nn.Linear(16, 8)
    model.norm = nn.LayerNorm(8)
    model.head = nn.Linear(8, 4)
    parallelize_module(
        model,
        mesh,
        {
            "up": ColwiseParallel(),
            "down": RowwiseParallel(output_layouts=Shard(1)),
            "norm": SequenceParallel(use_local_output=True),
            "head": ColwiseParallel(output_layouts=Replicate()),
        },
    )
    assert module_style(model.up, set()).outputs == Layout("split", dim=-1)
    assert module_style(model.down, set()).outputs == Layout("split", dim=1)
    assert module_style(model.norm, set()).outputs == Layout("split", dim=1)
    assert module_style(model.head, set()).outputs == Layout("replica")
    # A local input handed over by PrepareModuleInput follows its desired layout.
    block = nn.Module()
    block.mlp = nn.Linear(8, 8)
    gather = PrepareModuleInput(
        input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),), use_local_output=True
    )
    parallelize_module(block, mesh, {"mlp": gather})
    assert module_style(block.mlp, set()).inputs == Layout("replica")

    from transformers.distributed.tensor_parallel import apply_tensor_parallelism

    hf = nn.Module()
    hf.q_proj = nn.Linear(8, 8)
    hf.o_proj = nn.Linear(8, 8)
    apply_tensor_parallelism(hf, mesh, {"q_proj": "colwise", "o_proj": "rowwise"})
    q, o = module_style(hf.q_proj, set()), module_style(hf.o_proj, set())
    assert (q.inputs, q.outputs) == (Layout("replica"), Layout("split", dim=-1))
    assert (o.inputs, o.outputs) == (Layout("split", dim=-1), Layout("replica"))
    assert q.source == "transformers ColwiseParallel"
