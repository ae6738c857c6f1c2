"""A reference captured without perturbed variants (`--perturbations 0`): correct candidates
are clean under the analytic bound derived from reduction paths, the bugs of the zoo it can
bound are caught in the right phase, and what it cannot bound (the optimizer step, later
steps) is reported as provisional, neither clean nor divergent with confidence. A fast subset
of bench/analytic_bound.py, which runs every layout and bug with and without variants."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ttrace_testing.zoo_lib import CONFIGS, TTRACE, diff, require_cli, run_candidate, run_reference

REPO = Path(__file__).resolve().parents[2]


SEED = 1234
STEP_KINDS = {"param_after_step", "optimizer_state"}


@pytest.fixture(autouse=True)
def _cli_built() -> None:
    require_cli()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TP2, DP2 and the bugs below share model flags, so one reference serves them all."""
    out = tmp_path_factory.mktemp("ref") / "bundle"
    return run_reference(out, CONFIGS["TP2"], "fp32", SEED, perturbations=0)


def provisional_only_where_unbounded(report: dict) -> None:
    """Provisional exactly where the bound is not sound: the step's outputs, later steps."""
    for t in report["tensors"]:
        if t.get("ratio") is None or not t["dtype"].startswith(("float", "bfloat")):
            continue
        later = t["id"]["iteration"] > 0 or t["id"]["kind"] in STEP_KINDS
        assert (t["provisional"] is not None) == later, t["label"]
        assert t["tolerance_detail"]["source"] == "analytic", t["label"]


@pytest.mark.parametrize("config", ["TP2", "DP2"])
def test_correct_candidate_is_clean_without_variants(
    tmp_path: Path, reference: Path, config: str
) -> None:
    cand = run_candidate(tmp_path / "cand", CONFIGS[config], "fp32", SEED, ref=reference)
    v = diff(reference, cand, tmp_path / "diff.json")
    s = v.report["summary"]
    assert v.exit_code == 0 and v.divergent == 0, (v.divergent, v.max_ratio, v.first_forward)
    assert s["perturbed_variants"] == 0
    assert s["provisional"] > 0 and s["provisional_over_bound"] == 0, s
    provisional_only_where_unbounded(v.report)
    # Every reduction of the path counts: a gradient's is longer than its forward's.
    grads = [t for t in v.report["tensors"] if t["id"]["kind"] == "main_grad"]
    assert all(t["tolerance_detail"]["reduction_length"] > 0 for t in grads)
    # The CLI's verdict says the verdict is provisional, as the explorer's caveat does.
    out = subprocess.run(
        [str(TTRACE), "diff", "--no-cache", str(reference), str(cand)],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    assert "CLEAN (provisional)" in out and "Provisional (analytic bound only)" in out, out


@pytest.mark.parametrize(
    ("bug", "config", "phase"),
    [
        ("sp-norm-grad-not-reduced", "TP2", "gradient_reduction"),  # the demo's default
        ("vocab-ce-missing-allreduce", "TP2", "forward"),
        ("dp-grad-sum-not-mean", "DP2", "gradient_reduction"),
    ],
)
def test_bug_is_caught_without_variants(
    tmp_path: Path, reference: Path, bug: str, config: str, phase: str
) -> None:
    cand = run_candidate(
        tmp_path / "cand", CONFIGS[config], "fp32", SEED, "--inject", bug, ref=reference
    )
    v = diff(reference, cand, tmp_path / "diff.json")
    assert v.exit_code == 1, f"{bug}: not caught (max ratio {v.max_ratio})"
    assert v.report["first_divergence"]["phase"] == phase, v.report["first_divergence"]
    # Confident divergences only where the bound is sound: iteration 0, before the step.
    for t in v.report["tensors"]:
        if t["status"] == "divergent":
            assert t["provisional"] is None, t["label"]
    md = tmp_path / "report.md"
    subprocess.run(
        [str(TTRACE), "diff", "--no-cache", str(reference), str(cand), "--markdown", str(md)],
        capture_output=True, check=False,
    )  # fmt: skip
    assert "| provisional | Provisional (analytic bound only)" in md.read_text()
