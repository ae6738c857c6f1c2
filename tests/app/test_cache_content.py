"""The summary cache cannot lie and never writes inside a bundle, in both front ends.

A value is changed in place in a rank file with the file's size and mtime restored (what a
cache keyed by names, sizes and times cannot see); `ttrace diff` and the explorer's headless
mode must both recompute instead of serving the old verdict, and neither may leave a byte
changed inside either bundle.

Runs the built binaries from $TTRACE_BIN_DIR (set by CTest); skipped when it is not set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest

BIN_DIR = os.environ.get("TTRACE_BIN_DIR")
pytestmark = pytest.mark.skipif(not BIN_DIR, reason="TTRACE_BIN_DIR is not set")

DATASET = "nominal/iter_0/mb_0/layers.0.mlp.fc1/forward_output/0"


def run(tool: str, cache: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    assert BIN_DIR is not None
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), QT_QPA_PLATFORM="offscreen")
    return subprocess.run(
        [str(Path(BIN_DIR) / tool), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def front_ends() -> list[str]:
    assert BIN_DIR is not None
    tools = ["ttrace"]
    if (Path(BIN_DIR) / "ttrace-explorer").exists():
        tools.append("ttrace-explorer")
    return tools


def compare(tool: str, cache: Path, ref: Path, cand: Path, out: Path) -> int:
    """One comparison through `tool`; its exit code (0 clean, 1 divergent, 2 invalid)."""
    if tool == "ttrace":
        result = run(tool, cache, "diff", ref, cand)
    else:
        result = run(tool, cache, "--markdown", out / "report.md", ref, cand)
    return result.returncode


def snapshot(*dirs: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under the bundles: size, mtime and CRC-32 of its bytes."""
    state = {}
    for d in dirs:
        for p in sorted(d.rglob("*")):
            st = p.stat()
            crc = zlib.crc32(p.read_bytes()) if p.is_file() else 0
            state[str(p)] = (st.st_size, st.st_mtime_ns, crc)
    return state


def change_in_place(rank_file: Path) -> None:
    """Scales one float32 value by 1e3 in the file's bytes, restoring size and mtime."""
    before = rank_file.stat()
    with h5py.File(rank_file, "r") as f:
        dataset = f[DATASET]
        assert dataset.dtype == np.float32
        offset = dataset.id.get_offset()
        value = float(dataset[0, 0])
    assert offset is not None
    with open(rank_file, "r+b") as f:
        f.seek(offset)
        f.write(np.float32(value * 1e3 + 1.0).tobytes())
    os.utime(rank_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert rank_file.stat().st_size == before.st_size


def record_crc(bundle: Path, rank_file: str) -> None:
    """Writes the rank file's new CRC-32 into the manifest (same length), size and mtime kept:
    a bundle that is valid but holds other numbers than the cached one."""
    manifest = bundle / "manifest.json"
    before = manifest.stat()
    data = json.loads(manifest.read_text())
    entry = next(r for r in data["ranks"] if r["file"] == rank_file)
    new = f"{zlib.crc32((bundle / rank_file).read_bytes()):08x}"
    text = manifest.read_text().replace(f'"{entry["crc32"]}"', f'"{new}"')
    manifest.write_text(text)
    os.utime(manifest, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert manifest.stat().st_size == before.st_size


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean")
    subprocess.run(
        [sys.executable, "-m", "ttrace_testing.demo_bundles", str(root)],
        check=True,
        capture_output=True,
    )
    return root


@pytest.mark.parametrize("tool", ["ttrace", "ttrace-explorer"])
def test_value_changed_in_place_is_recomputed(tool: str, clean: Path, tmp_path: Path) -> None:
    if tool not in front_ends():
        pytest.skip(f"{tool} is not built")
    ref, cand, cache = tmp_path / "ref", tmp_path / "cand", tmp_path / "cache"
    shutil.copytree(clean / "reference", ref)
    shutil.copytree(clean / "candidate", cand)
    assert compare(tool, cache, ref, cand, tmp_path) == 0
    assert list((cache / "ttrace").glob("diff-*.json")), "the first run stores an entry"
    assert compare(tool, cache, ref, cand, tmp_path) == 0  # answered from the cache

    # The rank file's bytes change, its manifest CRC no longer matches: the damage is found.
    change_in_place(cand / "rank-00000.h5")
    assert compare(tool, cache, ref, cand, tmp_path) == 2
    # The manifest records the new CRC: a valid bundle whose numbers diverge.
    record_crc(cand, "rank-00000.h5")
    assert compare(tool, cache, ref, cand, tmp_path) == 1
    assert compare(tool, cache, ref, cand, tmp_path) == 1  # and that verdict is cached


def test_no_front_end_writes_inside_a_bundle(clean: Path, tmp_path: Path) -> None:
    ref, cand, cache = tmp_path / "ref", tmp_path / "cand", tmp_path / "cache"
    shutil.copytree(clean / "reference", ref)
    shutil.copytree(clean / "candidate", cand)
    before = snapshot(ref, cand)
    # Read-only bundle directories as well (a no-op for root, hence the snapshot).
    for d in (ref, cand):
        d.chmod(0o555)
    try:
        for tool in front_ends():
            for _ in range(2):  # a miss that stores, then a hit
                assert compare(tool, cache, ref, cand, tmp_path) == 0, tool
    finally:
        for d in (ref, cand):
            d.chmod(0o755)
    assert snapshot(ref, cand) == before
    assert list((cache / "ttrace").glob("diff-*.json"))


def test_cached_answer_equals_a_fresh_one(clean: Path, tmp_path: Path) -> None:
    ref, cand, cache = clean / "reference", clean / "candidate", tmp_path / "cache"
    assert run("ttrace", cache, "diff", ref, cand).returncode == 0
    assert run("ttrace", cache, "diff", "--json", tmp_path / "a.json", ref, cand).returncode == 0
    fresh = run("ttrace", cache, "diff", "--no-cache", "--json", tmp_path / "b.json", ref, cand)
    assert fresh.returncode == 0
    cached, computed = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert cached == computed
