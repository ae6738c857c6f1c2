"""Megatron-LM's `pretrain()` integration (`traced_train_step`) on a loop shaped like
`pretrain()`'s, with Megatron-core 0.16.1's own DDP, optimizer and schedule
(`megatron/pretrain_step.py`; Megatron-LM's `megatron.training` is not installed: the
megatron-core wheel holds `megatron/core` only). The reference's variants by `ttrace capture`
(one run per variant), the TP2 candidate under torchrun, compared by the real `ttrace diff`.

The correct run is clean with nothing invalid or missing; Megatron-core's row-parallel
reduction scaled on tp rank 1 in one module (`bugs.py`, `scale_rank`) is found there as the
first forward divergence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import PYTHON_DIR, diff
from launch_runner import capture

SCRIPT = PYTHON_DIR / "tests" / "megatron" / "pretrain_step.py"
MODULE = "tests.megatron.pretrain_step"
GUILTY = "decoder.layers.1.self_attention.linear_proj"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("megatron-pretrain") / "ref"
    capture(MODULE, ["--reference", "--perturbations", "2"], out, 1, ["--out", str(out)])
    return out


def test_the_script_needs_four_lines() -> None:
    marked = [line for line in SCRIPT.read_text().splitlines() if line.endswith("# ttrace")]
    # The two imports, seeded_init in the model provider, train_step wrapped.
    assert len(marked) == 4, marked


def test_correct_tp2_is_clean(reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 2, ["--out", str(cand), "--tp", "2"])
    code, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert code == 0, text
    assert s["compared"] > 1000 and (s["divergent"], s["invalid"], s["missing"]) == (0, 0, 0)
    clean = [t["id"] for t in report["tensors"] if t["status"] == "clean"]
    assert {i["iteration"] for i in clean} == {0, 1}
    assert "optimizer_state" in {i["kind"] for i in clean}


def test_a_scaled_row_parallel_reduction_is_found_in_its_module(
    reference: Path, tmp_path: Path
) -> None:
    cand = tmp_path / "cand"
    args = ["--out", str(cand), "--tp", "2", "--bug", "scale_rank"]
    capture(MODULE, ["--candidate"], cand, 2, args)
    code, report, text = diff(reference, cand, tmp_path)
    assert code == 1, text
    assert report["first_divergence"]["forward"] == GUILTY, text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert GUILTY in introduced, text
