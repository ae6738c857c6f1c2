"""`ttrace diff` end to end: exit codes 0/1/2, the JSON and Markdown reports, options.

Runs the built binary from $TTRACE_BIN_DIR (set by CTest); skipped when it is not set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
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
            [sys.executable, "-m", "ttrace_testing.demo_bundles", str(root / name), *extra],
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


# A tensor replicated in full on every rank: shortened by one element on each, it can no longer
# be compared with the reference (shape mismatch), though every file stays consistent.
SHORTENED = "nominal/iter_1/mb_all/layers.0.norm/parameter/weight"
HINT = 'ttc.annotate(norm.weight, replicate_over="tp")'


def _datasets(f: h5py.File) -> list[h5py.Dataset]:
    found: list[h5py.Dataset] = []

    def visit(_name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            found.append(obj)

    f.visititems(visit)
    return found


def _reseal(bundle: Path) -> None:
    """Recomputes the manifest's per-rank tensor count, bytes, size and CRC-32 after an edit."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    for entry in manifest["ranks"]:
        path = bundle / entry["file"]
        with h5py.File(path, "r") as f:
            datasets = _datasets(f)
            entry["tensors"] = len(datasets)
            entry["bytes"] = sum(d.size * d.dtype.itemsize for d in datasets)
        data = path.read_bytes()
        entry["file_size"] = len(data)
        entry["crc32"] = f"{zlib.crc32(data) & 0xFFFFFFFF:08x}"
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _edit_every_rank(bundle: Path, edit: Callable[[h5py.File], None]) -> None:
    for rank_file in sorted(bundle.glob("rank-*.h5")):
        with h5py.File(rank_file, "r+") as f:
            edit(f)
    _reseal(bundle)


def _shorten(f: h5py.File) -> None:
    old = f[SHORTENED]
    data, attrs = old[...][:-1], dict(old.attrs)
    del f[SHORTENED]
    new = f.create_dataset(SHORTENED, data=data)
    for key, value in attrs.items():
        new.attrs[key] = value
    new.attrs["global_shape"] = np.array([len(data)], dtype=np.int64)
    new.attrs["boxes"] = np.array([[0, 0, len(data)]], dtype=np.int64)
    new.attrs["layout_note"] = "replicated: same shape on every rank"
    new.attrs["annotate_hint"] = HINT


def test_invalid_and_divergent_exits_2_and_lists_both(demo: Path, tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    shutil.copytree(demo / "bug/candidate", cand)
    _edit_every_rank(cand, _shorten)
    out_json = tmp_path / "diff.json"
    run = ttrace("diff", "--no-cache", "--json", out_json, demo / "bug/reference", cand)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "invalid, missing or unresolved tensors:" in run.stdout
    assert "reference shape [16] vs candidate shape [15]" in run.stdout
    assert HINT in run.stdout and "replicated: same shape on every rank" in run.stdout
    assert "worst tensors:" in run.stdout and "divergent" in run.stdout
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("INVALID: 1 invalid, 0 missing") and "divergent" in last, last
    doc = json.loads(out_json.read_text())
    assert doc["summary"]["verdict"] == "invalid" and doc["summary"]["exit_code"] == 2
    bad = [t for t in doc["tensors"] if t["status"] == "invalid"]
    assert len(bad) == 1 and bad[0]["invalid_reason"]["annotate_hint"] == HINT
    quiet = ttrace("diff", "--no-cache", "--quiet", demo / "bug/reference", cand)
    assert (quiet.returncode, quiet.stdout.strip()) == (2, "invalid")


def test_missing_tensor_exits_2_even_when_the_rest_is_clean(demo: Path, tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    shutil.copytree(demo / "clean/candidate", cand)

    def drop(f: h5py.File) -> None:
        del f[SHORTENED]

    _edit_every_rank(cand, drop)
    run = ttrace("diff", "--no-cache", demo / "clean/reference", cand)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1].startswith("INVALID: 0 invalid, 1 missing")
    quiet = ttrace("diff", "--no-cache", "-q", demo / "clean/reference", cand)
    assert (quiet.returncode, quiet.stdout.strip()) == (2, "invalid")


def test_quiet_names_the_verdict(demo: Path) -> None:
    clean = ttrace("diff", "--no-cache", "-q", demo / "clean/reference", demo / "clean/candidate")
    assert (clean.returncode, clean.stdout.strip()) == (0, "clean")
    bug = ttrace("diff", "--no-cache", "-q", demo / "bug/reference", demo / "bug/candidate")
    assert (bug.returncode, bug.stdout.strip()) == (1, "divergent")


def test_text_json_and_markdown_lead_with_the_first_divergence(demo: Path, tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "d.json", tmp_path / "d.md"
    ref, cand = demo / "bug/reference", demo / "bug/candidate"
    run = ttrace("diff", "--no-cache", "--json", out_json, "--markdown", out_md, ref, cand)
    assert run.stdout.splitlines()[0].startswith(
        "first divergence  iteration 0, forward: layers.1.mlp.fc2 forward_output"
    ), run.stdout
    first = json.loads(out_json.read_text())["first_divergence"]
    assert (first["iteration"], first["phase"], first["module"], first["kind"]) == (
        0,
        "forward",
        "layers.1.mlp.fc2",
        "forward_output",
    )
    assert first["ranks"], first
    md = out_md.read_text()
    assert md.index("## First divergence") < md.index("## Divergent modules")
    assert run.stdout.strip().splitlines()[-1].startswith("DIVERGENT:")
