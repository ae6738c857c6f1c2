"""Layouts from what the job declares, before any inference from shapes, on real torch code
compared by the real `ttrace diff` CLI.

- A new user's first try: a tiny MLP with LayerNorm and batch-first activations
  (`[batch, features]` and `[batch, seq, features]`) under plain `DistributedDataParallel`
  on 2 gloo ranks, with the README's capture lines: DDP declares the batch dimension, so
  every activation is split over data parallelism on it, whatever the shapes. Clean runs
  exit 0 with nothing invalid or missing; gradients summed instead of averaged (a DDP
  communication hook) exit 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import diff, run_module


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
