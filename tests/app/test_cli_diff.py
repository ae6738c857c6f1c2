"""`ttrace diff` end to end: exit codes 0/1/2, the JSON and Markdown reports, options.

Runs the built binary from $TTRACE_BIN_DIR (set by CTest); skipped when it is not set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN_DIR = os.environ.get("TTRACE_BIN_DIR")
pytestmark = pytest.mark.skipif(not BIN_DIR, reason="TTRACE_BIN_DIR is not set")


def ttrace(*args: str | Path) -> subprocess.CompletedProcess[str]:
    assert BIN_DIR is not None
    return subprocess.run(
        [str(Path(BIN_DIR) / "ttrace"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    for name, extra in (("clean", []), ("bug", ["--inject-bug"])):
        subprocess.run(
            [sys.executable, "-m", "ttrace.demo_bundles", str(root / name), *extra],
            check=True,
            capture_output=True,
        )
    return root


def test_clean_candidate_exits_0(demo: Path) -> None:
    run = ttrace("diff", "--no-cache", demo / "clean/reference", demo / "clean/candidate")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "CLEAN" in run.stdout


def test_injected_bug_exits_1_and_names_the_module(demo: Path, tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "diff.json", tmp_path / "diff.md"
    run = ttrace(
        "diff",
        "--no-cache",
        "--json",
        out_json,
        "--markdown",
        out_md,
        demo / "bug/reference",
        demo / "bug/candidate",
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "forward: layers.1.mlp.fc2 (introduced)" in run.stdout
    doc = json.loads(out_json.read_text())
    assert doc["schema"] == "ttrace-diff" and doc["schema_version"] == 1
    assert doc["summary"]["clean"] is False
    assert doc["first_divergence"]["forward"] == "layers.1.mlp.fc2"
    modules = {m["name"]: m for m in doc["modules"]}
    assert modules["layers.1.mlp.fc2"]["origin"] == "introduced"
    tensor = doc["tensors"][modules["layers.1.mlp.fc2"]["tensors"][0]]
    for field in ("id", "error", "tolerance", "ratio", "status", "metrics", "histogram"):
        assert field in tensor
    assert "# TTrace diff: DIVERGENT" in out_md.read_text()


def test_tolerance_options_change_the_verdict(demo: Path) -> None:
    ref, cand = demo / "bug/reference", demo / "bug/candidate"
    # A 100% tolerance hides the bug (errors are ~30%): exit 0.
    assert ttrace("diff", "--no-cache", "--tolerance", "1", ref, cand).returncode == 0
    # ... unless an override for the buggy module's later consumers says otherwise.
    run = ttrace("diff", "--no-cache", "--tolerance", "1", "--override", "loss=1e-3", ref, cand)
    assert run.returncode == 1
    # Iteration 0 alone still has the bug.
    assert ttrace("diff", "--no-cache", "--iteration", "0", ref, cand).returncode == 1


def test_bad_input_exits_2(demo: Path, tmp_path: Path) -> None:
    cand = demo / "clean/candidate"
    assert ttrace("diff", "--no-cache", tmp_path / "missing", cand).returncode == 2
    assert ttrace("diff", cand).returncode == 2  # one bundle only
    assert ttrace("diff", "--frobnicate", cand, cand).returncode == 2
    assert ttrace("diff", "--override", "x:nokind=1", cand, cand).returncode == 2
    assert ttrace("diff", "--tolerance", "abc", cand, cand).returncode == 2
    # A candidate with a rank file missing cannot be merged: holes, exit 2.
    broken = tmp_path / "broken"
    shutil.copytree(cand, broken)
    (broken / "rank-00003.h5").unlink()
    run = ttrace("diff", "--no-cache", demo / "clean/reference", broken)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "rank-00003.h5" in run.stderr


def test_second_run_uses_the_cache(demo: Path, tmp_path: Path) -> None:
    ref = demo / "clean/reference"
    cand = tmp_path / "cand"
    shutil.copytree(demo / "clean/candidate", cand)
    assert ttrace("diff", ref, cand).returncode == 0
    entries = list((cand / ".ttrace-cache").glob("diff-*.json"))
    assert len(entries) == 1
    first = ttrace("diff", "--json", tmp_path / "a.json", ref, cand)
    assert first.returncode == 0
    assert ttrace("diff", "--no-cache", "--json", tmp_path / "b.json", ref, cand).returncode == 0
    cached, fresh = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert cached == fresh
