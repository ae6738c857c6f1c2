"""Layouts from what the job declares, before any inference from shapes, on real torch code
compared by the real `ttrace diff` CLI.

- A new user's first try: a tiny MLP with LayerNorm and batch-first activations
  (`[batch, features]` and `[batch, seq, features]`) under plain `DistributedDataParallel`
  on 2 gloo ranks, with the README's capture lines: DDP declares the batch dimension, so
  every activation is split over data parallelism on it, whatever the shapes. Clean runs
  exit 0 with nothing invalid or missing; gradients summed instead of averaged (a DDP
  communication hook) exit 1.
- torch's tensor + sequence parallel styles on Hugging Face's `LlamaForCausalLM` and on a
  torchtitan-style block with its attention kernel as a module: the rotary embedding's
  outputs (computed from replicated position ids, the hidden states split on the sequence
  only) are whole on every rank, and the kernel's `[b, heads/tp, s, head_dim]` inputs and
  output are split on the heads as the column-parallel projections declare, although
  head_dim x tp equals a weight's width in both models. A scaled row-parallel partial is
  caught in its module.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest
import torch
from job_runner import diff, run_module

from ttrace.capture.layout import Layout
from ttrace.capture.lineage import lineage_layout, tag


def run_mlp(out: Path, nproc: int, *extra: str) -> None:
    run_module("tests.frameworks.mlp_ddp", ["--out", str(out), *extra], nproc, 120)


@pytest.fixture(scope="module")
def mlp_references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mlp")
    refs = {"2d": base / "ref-2d", "3d": base / "ref-3d"}
    run_mlp(refs["2d"], 1)
    run_mlp(refs["3d"], 1, "--tokens")
    return refs


@pytest.mark.parametrize("shape", ["2d", "3d"])
def test_ddp_mlp_is_clean(shape: str, mlp_references: dict[str, Path], tmp_path: Path) -> None:
    cand = tmp_path / f"cand-{shape}"
    run_mlp(cand, 2, *(["--tokens"] if shape == "3d" else []))
    rc, report, text = diff(mlp_references[shape], cand, tmp_path)
    summary = report["summary"]
    assert (rc, summary["invalid"], summary["missing"], summary["divergent"]) == (0, 0, 0, 0), text
    kinds = {t["id"]["kind"] for t in report["tensors"] if t["status"] == "clean"}
    assert {"forward_input", "forward_output", "output_grad", "param_grad", "main_grad"} <= kinds
    # Every module's forward output is compared, in each captured iteration.
    outputs = {
        (t["id"]["iteration"], t["id"]["module"])
        for t in report["tensors"]
        if t["id"]["kind"] == "forward_output" and t["status"] == "clean"
    }
    assert {(i, m) for i in (0, 1) for m in ("fc1", "norm", "act", "fc2")} <= outputs, text


def test_ddp_gradients_summed_not_averaged_are_caught(
    mlp_references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / "cand-sum"
    run_mlp(cand, 2, "--bug", "sum")
    rc, report, text = diff(mlp_references["2d"], cand, tmp_path)
    summary = report["summary"]
    assert rc == 1 and summary["divergent"] > 0, text
    assert summary["invalid"] == 0 and summary["missing"] == 0, text
    divergent = {t["id"]["kind"] for t in report["tensors"] if t["status"] == "divergent"}
    assert "main_grad" in divergent, text
    # Forward activations of the first step and per-rank gradients before the reduction
    # are still right: the bug enters at the reduction.
    first_step = [
        t
        for t in report["tensors"]
        if t["id"]["iteration"] == 0 and t["id"]["kind"] in ("forward_output", "param_grad")
    ]
    assert first_step and all(t["status"] == "clean" for t in first_step), text


def run_tp(out: Path, nproc: int, model: str, bug: str = "none") -> None:
    argv = ["--out", str(out), "--model", model, "--bug", bug]
    run_module("tests.frameworks.declared_tp", argv, nproc, 300)


@pytest.fixture(scope="module")
def tp_references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("tp")
    refs = {m: base / f"ref-{m}" for m in ("hf", "sdpa")}
    for model, out in refs.items():
        run_tp(out, 1, model)
    return refs


def stored(bundle: Path, rank: int, module: str, kind: str, index: str) -> tuple:
    """(local shape, global shape, combine, placement source) of a tensor of iteration 0."""
    with h5py.File(bundle / f"rank-{rank:05d}.h5", "r") as f:
        d = f[f"nominal/iter_0/mb_0/{module}/{kind}/{index}"]
        a = d.attrs
        return (
            tuple(d.shape),
            tuple(int(n) for n in a["global_shape"]),
            a["combine"],
            a.get("placement_source"),
        )


# (module, kind, index) -> (local shape on a rank, logical shape, how ranks combine, source):
# the kernel's inputs carry the projections' declared split; its output and the rotary
# tables are inferred from what their inputs declare.
DECLARED = {
    "hf": {
        ("model.rotary_emb", "forward_output", "0"): ((1, 8, 8), (1, 8, 8), "replica", "inferred"),
        ("model.rotary_emb", "forward_output", "1"): ((1, 8, 8), (1, 8, 8), "replica", "inferred"),
        ("model.layers.0.mlp.down_proj", "forward_output", "0"): (
            (4, 4, 32),
            (4, 8, 32),
            "copy",
            "declared",
        ),
    },
    "sdpa": {
        ("layers.0.attention.sdpa", "forward_input", "0"): (
            (4, 2, 8, 8),
            (4, 4, 8, 8),
            "copy",
            "declared",
        ),
        ("layers.0.attention.sdpa", "forward_input", "1"): (
            (4, 2, 8, 8),
            (4, 4, 8, 8),
            "copy",
            "declared",
        ),
        ("layers.0.attention.sdpa", "forward_output", "0"): (
            (4, 2, 8, 8),
            (4, 4, 8, 8),
            "copy",
            "inferred",
        ),
    },
}


@pytest.mark.parametrize("model", ["hf", "sdpa"])
def test_tp_styles_carry_to_tensors_nothing_declares(
    model: str, tp_references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / f"cand-{model}"
    run_tp(cand, 2, model)
    for (module, kind, index), expected in DECLARED[model].items():
        assert stored(cand, 1, module, kind, index) == expected, (module, kind, index)
    rc, report, text = diff(tp_references[model], cand, tmp_path)
    summary = report["summary"]
    assert (rc, summary["invalid"], summary["missing"], summary["divergent"]) == (0, 0, 0, 0), text
    assert summary["compared"] > 400, text
    # Every tensor says where its placement came from; the projections' are declared.
    sources = {t["placement_source"] for t in report["tensors"]}
    assert sources == {"declared", "inferred"}, sources


@pytest.mark.parametrize("model", ["hf", "sdpa"])
def test_tp_row_parallel_bug_is_caught_in_its_module(
    model: str, tp_references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / f"bug-{model}"
    run_tp(cand, 2, model, "scale")
    rc, report, text = diff(tp_references[model], cand, tmp_path)
    summary = report["summary"]
    assert rc == 1 and summary["invalid"] == 0 and summary["missing"] == 0, text
    guilty = "model.layers.0.mlp.down_proj" if model == "hf" else "layers.0.feed_forward.w2"
    assert report["first_divergence"]["forward"] == guilty, text


def test_lineage_maps_a_declared_split_through_views_and_elementwise_ops() -> None:
    """Real autograd graphs of the code between two modules: the split dimension follows
    views, transposes, broadcasts and slices elsewhere; any op that could move it stops."""
    x = torch.randn(2, 3, 5, requires_grad=True)
    colwise = torch.nn.Linear(5, 16)(x)  # a local [b, s, heads/tp * head_dim] shard
    tag(colwise, Layout("split", dim=-1), "bs", "declared")
    q = colwise.view(2, 3, -1, 8).transpose(1, 2)  # [b, heads/tp, s, head_dim]
    assert lineage_layout(q) == Layout("split", dim=1)
    table = torch.randn(3, 8)  # a replicated rotary table, broadcast
    rotated = q * table + torch.cat([-q[..., 4:], q[..., :4]], dim=-1) * table
    assert lineage_layout(rotated.to(torch.float64)) == Layout("split", dim=1)
    # repeat_kv: [b, s, kv, d] -> [b, s, kv, n_rep, d] -> [b, s, kv * n_rep, d]
    kv = colwise.view(2, 3, 2, 8)
    repeated = kv[:, :, :, None, :].expand(2, 3, 2, 2, 8).reshape(2, 3, 4, 8)
    assert lineage_layout(repeated) == Layout("split", dim=2)
    # one head per rank: the split still lands on the heads, of local size 1
    one = torch.nn.Linear(5, 8)(x)
    tag(one, Layout("split", dim=-1), "bs", "declared")
    assert lineage_layout(one.view(2, 3, -1, 8)) == Layout("split", dim=2)
    # what would move or cut the split dimension gives no answer, never a guess
    assert lineage_layout(colwise @ torch.randn(16, 4)) is None
    assert lineage_layout(colwise[..., :8]) is None
    assert lineage_layout(colwise.view(2, 3, 2, 8).flatten(1, 2)) is None
    assert lineage_layout(torch.randn(2, 3, requires_grad=True) * 2) is None
    # A replica passes only known ops: a custom function (a scatter to sequence-parallel
    # regions, a collective) may split it.
    whole = torch.nn.Linear(5, 5)(x)
    tag(whole, Layout("replica"), "bs", "declared")
    assert lineage_layout(whole.transpose(0, 1) * 2) == Layout("replica")
    assert lineage_layout(FirstHalfOfSequence.apply(whole)) is None


class FirstHalfOfSequence(torch.autograd.Function):
    """A custom op that keeps part of its input, as a scatter to a rank's sequence shard."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        return x[:, : x.shape[1] // 2].clone()

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        full = grad.new_zeros(grad.shape[0], grad.shape[1] * 2, *grad.shape[2:])
        full[:, : grad.shape[1]] = grad
        return full
