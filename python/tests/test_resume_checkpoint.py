"""A real starting point: the example GPT saves a torch distributed checkpoint (DCP) from one
layout; a single-process reference (with perturbed variants) and candidates in two other
layouts resume from it, resharded, and are captured after the resume (real torchrun, gloo).

Correct candidates are clean; each resume bug (optimizer state dropped, LR warm-up restarted,
data position lost) makes `ttrace diff` exit 1 in the first resumed iteration's phase where
it enters; every bundle's manifest records the same checkpoint as its start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.gpt import bugs
from ttrace_testing.zoo_lib import Verdict, diff, require_cli, run_train

REPO = Path(__file__).resolve().parents[2]


# Warm-up longer than the saved steps, so a restarted schedule takes another learning rate.
COMMON = ("--iterations", "1", "--lr-warmup", "8")
LAYOUTS = {"TP2": ("--tp", "2"), "DP2": ("--dp", "2")}


@pytest.fixture(autouse=True)
def _cli_built() -> None:
    require_cli()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steps of TP2 x DP2 (4 ranks), saved: every later run loads it resharded."""
    base = tmp_path_factory.mktemp("ckpt")
    run_train(
        base / "pre", 4, "--tp", "2", "--dp", "2", "--iterations", "2", "--lr-warmup", "8",
        "--capture", "none", "--save-checkpoint", str(base / "ckpt"),
    )  # fmt: skip
    return base / "ckpt"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, checkpoint: Path) -> Path:
    out = tmp_path_factory.mktemp("ref") / "bundle"
    run_train(out, 1, "--reference", "--perturbations", "2", "--resume", str(checkpoint), *COMMON)
    return out


def start_of(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())["start"]


def candidate(tmp_path: Path, checkpoint: Path, layout: str, *inject: str) -> Path:
    out = tmp_path / "cand"
    flags = [f for b in inject for f in ("--inject", b)]
    run_train(out, 2, *LAYOUTS[layout], "--resume", str(checkpoint), *COMMON, *flags)
    return out


def first(v: Verdict) -> tuple[int, str, str]:
    fd = v.report["first_divergence"]
    return fd["iteration"], fd["phase"], fd["kind"]


def test_resume_bugs_are_known() -> None:
    assert {
        "resume-optimizer-state-dropped",
        "resume-lr-restart",
        "resume-data-position",
    } == bugs.RESUME


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_correct_resume_is_clean(
    tmp_path: Path, checkpoint: Path, reference: Path, layout: str
) -> None:
    cand = candidate(tmp_path, checkpoint, layout)
    v = diff(reference, cand, tmp_path / "diff.json")
    s = v.report["summary"]
    print(f"{layout} correct: compared {s['compared']} divergent {s['divergent']} "
          f"invalid {s['invalid']} exit {v.exit_code}")  # fmt: skip
    assert v.exit_code == 0 and s["divergent"] == 0 and s["invalid"] == 0, s
    assert s["compared"] > 100
    ref_start, cand_start = start_of(reference), start_of(cand)
    assert ref_start == cand_start
    assert ref_start["step"] == 2 and ref_start["kind"] == "torch-dcp"


@pytest.mark.parametrize(
    ("bug", "layout", "where"),
    [
        ("resume-optimizer-state-dropped", "TP2", (0, "optimizer_step", "param_after_step")),
        ("resume-optimizer-state-dropped", "DP2", (0, "optimizer_step", "param_after_step")),
        ("resume-lr-restart", "TP2", (0, "optimizer_step", "param_after_step")),
        ("resume-data-position", "DP2", (0, "forward", "forward_input")),
    ],
)
def test_resume_bug_is_caught(
    tmp_path: Path,
    checkpoint: Path,
    reference: Path,
    bug: str,
    layout: str,
    where: tuple[int, str, str],
) -> None:
    cand = candidate(tmp_path, checkpoint, layout, bug)
    v = diff(reference, cand, tmp_path / "diff.json")
    s = v.report["summary"]
    print(f"{bug} {layout}: compared {s['compared']} divergent {s['divergent']} "
          f"invalid {s['invalid']} exit {v.exit_code} first {first(v)}")  # fmt: skip
    assert v.exit_code == 1, s
    assert first(v) == where
    # The manifest names the checkpoint as given: the bug is in what the resume restored.
    assert start_of(cand) == start_of(reference)


def test_fresh_candidate_against_resumed_reference_warns(
    tmp_path: Path, reference: Path, checkpoint: Path
) -> None:
    """A candidate that did not resume: the report says the starts differ (and diverges)."""
    cand = tmp_path / "fresh"
    run_train(cand, 2, *LAYOUTS["TP2"], *COMMON)
    assert "start" not in json.loads((cand / "manifest.json").read_text())
    v = diff(reference, cand, tmp_path / "diff.json")
    warned = [d for d in v.report["diagnostics"] if d["code"] == "start-differs"]
    assert len(warned) == 1 and warned[0]["severity"] == "warning", v.report["diagnostics"]
    assert "fresh weights" in warned[0]["message"]
    assert v.exit_code == 1


def test_malformed_start_is_one_warning(tmp_path: Path, checkpoint: Path, reference: Path) -> None:
    """A damaged `start` section: a warning naming it, read as a fresh start, still compared."""
    cand = candidate(tmp_path, checkpoint, "TP2")
    manifest = cand / "manifest.json"
    data = json.loads(manifest.read_text())
    data["start"] = {"kind": "torch-dcp", "step": "two"}
    manifest.write_text(json.dumps(data))
    v = diff(reference, cand, tmp_path / "diff.json")
    codes = sorted(d["code"] for d in v.report["diagnostics"] if d["severity"] == "warning")
    assert codes == ["manifest-start", "start-differs"], v.report["diagnostics"]
    assert v.exit_code == 0 and v.report["summary"]["divergent"] == 0
