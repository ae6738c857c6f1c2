"""The bug zoo in CI: a fast fp32 subset of bench/bug_matrix.py. Each injected bug must make
`ttrace diff` exit 1 and be localized to the module (or optimizer phase) that holds it.
The full matrix (every bug, fp32/bf16/fp8) is `python bench/bug_matrix.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.gpt import bugs
from ttrace_testing.bug_specs import SPECS
from ttrace_testing.verdicts import judge, verdict_holds
from ttrace_testing.zoo_lib import CONFIGS, diff, matches, require_cli, run_candidate, run_reference

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _cli_built() -> None:
    require_cli()


# One bug per mechanism (grad reduction, forward mask, missing forward collective, CP
# positions, a wrong backward, DP scale, optimizer step): every phase a bug can enter in;
# all share one reference (no model flags differ).
FAST = [
    "sp-norm-grad-not-reduced",
    "vocab-embedding-off-by-one",
    "vocab-ce-missing-allreduce",
    "rope-cp-offset",
    "cp-attn-backward",
    "dp-grad-sum-not-mean",
    "dist-opt-wrong-offset",
]
BY_NAME = {s.bug: s for s in SPECS}
SEED = 1234


def test_every_known_bug_is_in_the_matrix() -> None:
    # Resume bugs need a checkpoint: test_resume_checkpoint.py covers them.
    assert set(BY_NAME) == set(bugs.KNOWN) - bugs.RESUME
    assert all(s.config in CONFIGS for s in SPECS)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = CONFIGS[BY_NAME[FAST[0]].config]
    assert all(CONFIGS[BY_NAME[b].config].shared == cfg.shared for b in FAST)
    return run_reference(tmp_path_factory.mktemp("ref") / "bundle", cfg, "fp32", SEED)


@pytest.mark.parametrize("bug", FAST)
def test_bug_is_detected_and_localized(tmp_path: Path, reference: Path, bug: str) -> None:
    spec = BY_NAME[bug]
    cand = run_candidate(
        tmp_path / "cand", CONFIGS[spec.config], "fp32", SEED, "--inject", bug, ref=reference
    )
    v = diff(reference, cand, tmp_path / "diff.json")
    assert v.detected, f"{bug}: not flagged (max ratio {v.max_ratio})"
    assert matches(v.located, spec.where), (
        f"{bug}: localized to {v.located!r}, expected {spec.where!r} "
        f"(forward {v.first_forward}, backward {v.first_backward}, introduced {v.introduced})"
    )
    # The verdict one can act on: exit 1, the first divergence in the bug's phase, the guilty
    # module introduced, at most one other, and the hint naming the bug's class.
    verdict = judge(spec, v.report, v.exit_code)
    assert verdict_holds(verdict), verdict
    assert verdict["hint"] == bug, verdict
    if bug == "sp-norm-grad-not-reduced":
        first = v.report["first_divergence"]
        assert (first["iteration"], first["phase"]) == (0, "gradient_reduction"), first
        assert "layernorm" in first["module"], first
        # What README's "What the demo does" says of this bug: only norms are introduced;
        # the other divergent modules inherit their divergence.
        origins = {m["name"]: m["origin"] for m in v.report["modules"]}
        introduced = [name for name, origin in origins.items() if origin == "introduced"]
        assert introduced and all("layernorm" in name for name in introduced), introduced
        assert "inherited" in origins.values(), origins


def test_tied_embedding_not_synced(tmp_path: Path) -> None:
    """Needs its own (tied) reference: the correct PP2 candidate is clean, the one without the
    embedding-group all-reduce diverges at `embedding` (replicas of the two stages disagree)."""
    spec = BY_NAME["tied-embedding-not-synced"]
    cfg = CONFIGS[spec.config]
    ref = run_reference(tmp_path / "ref", cfg, "fp32", SEED)
    ok = run_candidate(tmp_path / "ok", cfg, "fp32", SEED, ref=ref)
    v = diff(ref, ok, tmp_path / "ok.json")
    assert not v.detected, f"false alarm: {v.divergent} flagged, max ratio {v.max_ratio:.3g}"
    bad = run_candidate(tmp_path / "bad", cfg, "fp32", SEED, "--inject", spec.bug, ref=ref)
    v = diff(ref, bad, tmp_path / "bad.json")
    assert v.detected, f"not flagged (max ratio {v.max_ratio})"
    assert matches(v.located, spec.where), f"localized to {v.located!r}"
    first = [
        t for t in v.report["tensors"]
        if t["status"] == "divergent" and t["id"]["iteration"] == 0
    ]  # fmt: skip
    assert {t["id"]["kind"] for t in first} <= {"main_grad", "param_after_step"}
    assert any(f["code"] == "replica-disagree" for t in first for f in t["findings"])
