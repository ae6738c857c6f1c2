"""Gradient scale from the conventions the job declares: real FSDP2 (`fully_shard`, 2 gloo
ranks) with torchtitan's convention (loss divided by the global token count, FSDP2 told not
to divide: `set_gradient_divide_factor(1.0)`), `frameworks/fsdp_token_sum.py`, against its
single-process reference, compared by the real `ttrace diff` CLI.

- Read from FSDP2, the convention is recorded with its source and the correct run is clean
  (before, the capture assumed FSDP2 averages: 156 activation and parameter gradients of this
  run were divergent, each exactly x1/dp).
- Declared wrongly (`ParallelInfo(grad_reduce="mean")`), the correct run is still clean, and
  the whole-run factor is named once as a convention mismatch (x0.5 = 1/dp), not reported as
  a divergence per gradient.
- A loss divided by each rank's own token count (a real bug: the reduced gradients are dp
  times too large) is never excused: exit 1 with divergent main gradients.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from job_runner import diff, run_module


def run(out: Path, nproc: int, *args: str) -> None:
    run_module("tests.frameworks.fsdp_token_sum", ["--out", str(out), *args], nproc, 300)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("conventions") / "reference"
    run(out, 1)
    return out


def gradients(report: dict) -> list[dict]:
    kinds = ("output_grad", "input_grad", "param_grad")
    return [t for t in report["tensors"] if t["id"]["kind"] in kinds]


def test_divide_factor_read_from_fsdp2_makes_the_correct_run_clean(
    reference: Path, tmp_path: Path
) -> None:
    cand = tmp_path / "fsdp-sum"
    run(cand, 2)
    convention = json.loads((cand / "manifest.json").read_text())["gradient_convention"]
    assert convention["reduction"] == "sum" and convention["divide_factor"] == 1.0, convention
    assert convention["determined"] and convention["source"].startswith("fsdp2:"), convention
    assert convention["declared"] == {"gradient_divide_factor": 1.0, "reduce_dtype": None}
    rc, report, text = diff(reference, cand, tmp_path)
    summary = report["summary"]
    assert (rc, summary["divergent"], summary["missing"], summary["invalid"]) == (0, 0, 0, 0), text
    assert summary["compared"] > 400 and len(gradients(report)) > 150, text
    assert report["convention_mismatch"] is None, text
    assert "fsdp2: set_gradient_divide_factor(1)" in summary["gradient_convention"], text


def test_wrongly_declared_convention_is_named_once_and_the_run_is_clean(
    reference: Path, tmp_path: Path
) -> None:
    cand = tmp_path / "declared-mean"
    run(cand, 2, "--declare", "mean")
    rc, report, text = diff(reference, cand, tmp_path)
    summary = report["summary"]
    assert (rc, summary["verdict"], summary["divergent"]) == (0, "clean", 0), text
    mismatch = report["convention_mismatch"]
    assert mismatch is not None and mismatch["factor"] == pytest.approx(0.5, rel=1e-6), text
    assert mismatch["factor_name"] == "x0.5 (= 1/dp)", mismatch
    assert "declared: ParallelInfo(grad_reduce='mean')" in mismatch["declared"], mismatch
    # Every capture-side gradient, and nothing else, was judged after the factor.
    excused = [
        t for t in report["tensors"] if any(f["code"] == "convention-factor" for f in t["findings"])
    ]
    assert len(excused) == mismatch["tensors"] == len(gradients(report)) > 150, text
    assert all(t["status"] == "clean" and t["ratio"] <= 1.0 for t in excused), text
    main = [t for t in report["tensors"] if t["id"]["kind"] == "main_grad"]
    assert main and all(t["status"] == "clean" for t in main), text
    assert text.count("convention mismatch") == 2, text  # its line and the verdict's pointer


def test_loss_scaled_by_local_token_counts_is_never_excused(
    reference: Path, tmp_path: Path
) -> None:
    cand = tmp_path / "local-tokens"
    run(cand, 2, "--bug", "local-tokens")
    rc, report, text = diff(reference, cand, tmp_path)
    assert rc == 1 and report["convention_mismatch"] is None, text
    main = [t for t in report["tensors"] if t["id"]["kind"] == "main_grad"]
    assert main and all(t["status"] == "divergent" for t in main), text
    factors = [t["diagnosis"][0]["factor"] for t in main if t["diagnosis"]]
    assert factors and all(f == pytest.approx(2.0, rel=1e-4) for f in factors), factors
