"""Zero false alarms in CI: correct distributed candidates (no injected bug) must be judged
clean by `ttrace diff` over several seeds and precisions. A fast subset of
bench/false_alarms.py, which sweeps every layout, FP32/BF16/FP8 and ten seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttrace_testing.zoo_lib import CONFIGS, diff, require_cli, run_candidate, run_reference

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _cli_built() -> None:
    require_cli()


CASES = [
    ("TP2", "fp32", 1),
    ("TP2", "fp32", 2),
    ("CP2", "fp32", 1),
    ("CP2", "fp32", 2),
    ("TP2", "bf16", 1),
]


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Path]:
    """One reference per (precision, seed): TP2 and CP2 share model flags."""
    root = tmp_path_factory.mktemp("refs")
    return {
        (p, s): run_reference(root / f"{p}-{s}", CONFIGS["TP2"], p, s)
        for p, s in sorted({(p, s) for _, p, s in CASES})
    }


@pytest.mark.parametrize(("config", "precision", "seed"), CASES)
def test_correct_candidate_is_clean(
    tmp_path: Path, references: dict, config: str, precision: str, seed: int
) -> None:
    ref = references[(precision, seed)]
    cand = run_candidate(tmp_path / "cand", CONFIGS[config], precision, seed, ref=ref)
    v = diff(ref, cand, tmp_path / "diff.json")
    assert not v.detected, (
        f"false alarm: {v.divergent} tensors flagged, max ratio {v.max_ratio:.3g}, "
        f"first forward {v.first_forward}, backward {v.first_backward}"
    )
    assert v.max_ratio <= 1.0
