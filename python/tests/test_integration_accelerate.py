"""An accelerate training loop (`accelerator.prepare`, `accumulate`, `backward`) captured
with two lines: the reference's variants by `ttrace capture`, the DDP candidate under
torchrun, compared by the real `ttrace diff`.

The correct run with two accumulated micro-batches per step is clean with nothing invalid or
missing; a DDP communication hook that scales rank 1's partial gradient of one parameter is
caught in the gradient reduction at that parameter (this loop does not clip).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import PYTHON_DIR, diff
from launch_runner import capture

SCRIPT = PYTHON_DIR / "tests" / "frameworks" / "accelerate_loop.py"
MODULE = "tests.frameworks.accelerate_loop"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("accelerate") / "ref"
    capture(MODULE, ["--reference", "--perturbations", "2"], out, 1, [])
    return out


def test_the_loop_needs_three_lines() -> None:
    marked = [line for line in SCRIPT.read_text().splitlines() if line.endswith("# ttrace")]
    assert len(marked) == 3, marked  # the import, trace(...), tracer.close()


def test_correct_ddp_with_accumulation_is_clean(reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 2, [])
    code, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert code == 0, text
    assert s["compared"] > 700 and (s["divergent"], s["invalid"], s["missing"]) == (0, 0, 0)


def test_a_scaled_partial_gradient_is_caught_at_its_parameter(
    reference: Path, tmp_path: Path
) -> None:
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 2, ["--bug", "scale"])
    code, report, text = diff(reference, cand, tmp_path)
    first = report["first_divergence"]
    assert code == 1, text
    assert (first["iteration"], first["phase"]) == (0, "gradient_reduction"), first
    assert first["module"] == "model.layers.0.mlp.down_proj", first
