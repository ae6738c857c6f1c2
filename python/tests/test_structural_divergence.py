"""A bug that changes a module's structure is a divergence at that module (exit 1), not input
that cannot be compared (exit 2): real bundles from the capture of a small model under DDP on
2 gloo ranks (`frameworks/structure_bugs.py`) against its single-process reference, compared
by the real `ttrace diff` CLI.

- one output fewer (the skip-bias-add projection folds its bias in and returns none, the shape
  of Megatron-core's bias-added-before-the-reduce bug): `missing_in_candidate` at
  `layers.0.proj`, introduced there;
- an output of another shape (flattened to `[tokens, hidden]`, the numbers right):
  `shape_changed` at `layers.1.proj`, introduced there.
The same model without the bug stays clean (exit 0).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import diff, run_module


def run(out: Path, nproc: int, bug: str = "none") -> None:
    run_module("tests.frameworks.structure_bugs", ["--out", str(out), "--bug", bug], nproc, 300)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("structure") / "reference"
    run(out, 1)
    return out


def structural(report: dict) -> list[dict]:
    return [t for t in report["tensors"] if t["structure"] != "none"]


@pytest.mark.parametrize(
    ("bug", "module", "change", "slots"),
    [
        (
            "drop_bias_output",
            "layers.0.proj",
            "missing_in_candidate",
            {("forward_output", "1"), ("output_grad", "1")},
        ),
        (
            "flatten_output",
            "layers.1.proj",
            "shape_changed",
            {("forward_output", "0"), ("output_grad", "0")},
        ),
    ],
)
def test_structural_change_is_a_divergence_at_its_module(
    bug: str, module: str, change: str, slots: set, reference: Path, tmp_path: Path
) -> None:
    cand = tmp_path / bug
    run(cand, 2, bug)
    rc, report, text = diff(reference, cand, tmp_path)
    summary = report["summary"]
    assert rc == 1 and summary["verdict"] == "divergent", text
    assert (summary["missing"], summary["invalid"]) == (0, 0), text
    found = structural(report)
    # Both captured iterations, at the guilty module only.
    assert {t["id"]["module"] for t in found} == {module}, text
    assert {t["structure"] for t in found} == {change}, text
    assert {(t["id"]["kind"], t["id"]["index"]) for t in found} == slots, text
    assert {t["id"]["iteration"] for t in found} == {0, 1}, text
    assert all(t["status"] == "divergent" and t["ratio"] is None for t in found), text
    assert summary["structural"] == len(found) == 4, text
    assert report["first_divergence"]["forward"] == module, text
    introduced = {m["name"] for m in report["modules"] if m["origin"] == "introduced"}
    assert module in introduced, text
    assert f"structure       {change}" in text, text


def test_correct_candidate_stays_clean(reference: Path, tmp_path: Path) -> None:
    """The same model without the bug: every module call has the same tensors and shapes."""
    cand = tmp_path / "clean"
    run(cand, 2)
    rc, report, text = diff(reference, cand, tmp_path)
    summary = report["summary"]
    assert (rc, summary["divergent"], summary["missing"], summary["invalid"]) == (0, 0, 0, 0), text
    assert summary["structural"] == 0 and summary["compared"] > 150, text
    # DDP's average is the declared gradient convention, recorded with its source.
    assert (
        summary["gradient_convention"] == "mean, divide factor 2 (ddp: averages over its 2 ranks)"
    )
    assert report["convention_mismatch"] is None, text
