"""A TP2 x DP2 reference of the example GPT with experts and no expert parallelism (gloo):
each data-parallel rank's copy of an expert sees only its own tokens, and the capture records
them as its rows among the expert's global tokens (`expert_token_sets`), so the reference
validates, a correct TP2 x DP2 candidate is clean against it, and the zoo's router bug is
caught in the same module as with the single-process reference. The single-process reference
against a torchrun candidate also shows that thread-count differences are information, not a
warning. (About 5 minutes on two loaded cores: four captures.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ttrace_testing.zoo_lib import TTRACE, require_cli, run_train

SHARED = ("--experts", "4", "--layers", "2", "--iterations", "1")
ROUTER_BUG = "moe-router-not-synced"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require_cli()
    root = tmp_path_factory.mktemp("moeref")
    out = {name: root / name for name in ("single", "tp2dp2", "cand", "bug")}
    run_train(out["single"], 1, "--reference", "--perturbations", "2", *SHARED)
    # Both the distributed reference and the candidates replay the single reference's routing,
    # so a round-off flip of a near tie cannot send a token to another expert.
    replay = ("--routing-replay", str(out["single"] / "routing.pt"))
    ref_flags = ("--reference", "--perturbations", "2", "--tp", "2", "--dp", "2")
    run_train(out["tp2dp2"], 4, *ref_flags, *SHARED, *replay)
    run_train(out["cand"], 4, "--tp", "2", "--dp", "2", *SHARED, *replay)
    run_train(out["bug"], 2, "--tp", "2", "--inject", ROUTER_BUG, *SHARED, *replay)
    return out


def diff(ref: Path, cand: Path) -> tuple[int, dict, str]:
    """(exit code, JSON report, everything printed) of `ttrace diff`."""
    report = cand.parent / f"{ref.name}-vs-{cand.name}.json"
    proc = subprocess.run(
        [str(TTRACE), "diff", "--no-cache", "--json", str(report), str(ref), str(cand)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(report.read_text()), proc.stdout + proc.stderr


def introduced(report: dict) -> list[str]:
    return [m["name"] for m in report["modules"] if m.get("origin") == "introduced"]


def test_tp2dp2_moe_reference_validates(bundles: dict[str, Path]) -> None:
    proc = subprocess.run(
        [str(TTRACE), "validate", str(bundles["tp2dp2"])],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stdout + proc.stderr


def test_expert_rows_cover_the_global_tokens(bundles: dict[str, Path]) -> None:
    """Each data-parallel rank's expert rows are a block of the expert's global rows: the
    merged expert input has the single reference's shape."""
    code, report, text = diff(bundles["single"], bundles["tp2dp2"])
    s = report["summary"]
    assert code == 0, text
    assert (s["invalid"], s["unresolved"], s["missing"], s["divergent"]) == (0, 0, 0, 0)
    experts = [t for t in report["tensors"] if ".local_experts." in t["id"]["module"]]
    assert experts and all(t["status"] == "clean" for t in experts)


def test_correct_candidate_is_clean_against_it(bundles: dict[str, Path]) -> None:
    code, report, text = diff(bundles["tp2dp2"], bundles["cand"])
    s = report["summary"]
    assert code == 0, text
    assert s["compared"] > 0
    assert (s["invalid"], s["unresolved"], s["missing"], s["divergent"]) == (0, 0, 0, 0)


def test_router_bug_caught_in_the_same_module(bundles: dict[str, Path]) -> None:
    code_d, dist_ref, _ = diff(bundles["tp2dp2"], bundles["bug"])
    code_s, single_ref, _ = diff(bundles["single"], bundles["bug"])
    assert code_d == code_s == 1
    assert dist_ref["summary"]["invalid"] == single_ref["summary"]["invalid"] == 0
    assert "layers.1.mlp.router" in introduced(dist_ref)
    assert introduced(dist_ref) == introduced(single_ref)
    assert dist_ref["first_divergence"]["module"] == single_ref["first_divergence"]["module"]


def test_thread_counts_are_information_not_a_warning(bundles: dict[str, Path]) -> None:
    """One process against torchrun (which sets OMP_NUM_THREADS): no warning, and whatever
    differs is said to be unable to change a kernel."""
    code, report, text = diff(bundles["single"], bundles["cand"])
    assert code == 0, text
    assert "warning" not in text and "environments differ" not in text, text
    codes = [d.get("code") for d in report.get("diagnostics", [])]
    assert "environment-differs" not in codes
    if report["summary"]["environment_changes"]:
        assert "only settings that cannot change a kernel differ" in text, text
