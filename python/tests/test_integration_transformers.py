"""Hugging Face `Trainer.train()` captured with its loop untouched: the reference's variants
by `ttrace capture` (one Trainer run per variant), the DDP candidate under torchrun, both
through the real `ttrace` binary; compared by the real `ttrace diff`.

The correct run is clean with nothing invalid or
missing; a DDP communication hook that scales one parameter's partial gradient on rank 1 is
a divergence in the gradient reduction at iteration 0, worst at that parameter. The script
(`frameworks/hf_trainer.py`) marks its ttrace lines with `# ttrace`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import PYTHON_DIR, diff
from launch_runner import capture

SCRIPT = PYTHON_DIR / "tests" / "frameworks" / "hf_trainer.py"
MODULE = "tests.frameworks.hf_trainer"
GUILTY = "model.layers.0.mlp.down_proj"


class References:
    """One reference per accumulation (micro-batches per step), 2 variants each, captured
    the first time a test asks for it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.made: dict[int, Path] = {}

    def __getitem__(self, accumulate: int) -> Path:
        if accumulate not in self.made:
            out = self.base / f"accumulate-{accumulate}"
            role = ["--reference", "--perturbations", "2"]
            capture(MODULE, role, out, 1, ["--accumulate", str(accumulate)])
            self.made[accumulate] = out
        return self.made[accumulate]


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> References:
    return References(tmp_path_factory.mktemp("hf-trainer-refs"))


def test_the_script_needs_two_lines() -> None:
    marked = [line for line in SCRIPT.read_text().splitlines() if line.endswith("# ttrace")]
    assert len(marked) == 2, marked  # the import and trace(trainer)


# Accumulating 2 micro-batches of this batch leaves one row per process: Llama's `[1, s]`
# position ids, the same on every rank, resolve to a replica over dp (docs/integrations.md).
@pytest.mark.parametrize("accumulate", [1, 2])
def test_correct_ddp_is_clean(references: References, tmp_path: Path, accumulate: int) -> None:
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 2, ["--accumulate", str(accumulate)])
    code, report, text = diff(references[accumulate], cand, tmp_path)
    summary = report["summary"]
    assert code == 0, text
    assert summary["compared"] > 400
    counts = (summary["divergent"], summary["invalid"], summary["missing"], summary["unresolved"])
    assert counts == (0, 0, 0, 0), text
    assert report["summary"]["perturbed_variants"] == 2
    assert "ddp" in str(summary["gradient_convention"])


def test_a_scaled_partial_gradient_is_caught_in_the_reduction(
    references: References, tmp_path: Path
) -> None:
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 2, ["--bug", "scale"])
    code, report, text = diff(references[1], cand, tmp_path)
    assert code == 1, text
    first = report["first_divergence"]
    assert (first["iteration"], first["phase"]) == (0, "gradient_reduction"), first
    # The Trainer clips by the global norm, so every main gradient moves a little: with the
    # recorded clip coefficients those are read as moved by it, and the first divergence is
    # the guilty parameter's reduced gradient, which also moves most.
    assert first["module"] == GUILTY, text
    (step0_clip, *_) = report["clipping"]
    assert step0_clip["consistent"] and step0_clip["moved"] > 0, step0_clip
    step0 = [
        (t["ratio"], t["label"])
        for t in report["tensors"]
        if t["id"]["iteration"] == 0 and t["id"]["kind"] == "main_grad"
    ]
    step0.sort(reverse=True)
    assert GUILTY in step0[0][1], step0[:3]
    assert step0[0][0] > 5 * step0[1][0], step0[:3]
