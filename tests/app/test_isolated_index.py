"""Rank files are indexed by libhdf5 in a child process (ttrace-index), and contiguous data is
read with pread: a rank file whose metadata crashes or hangs libhdf5 must be a typed error
(exit 2) naming the file, in bounded time, from `validate` and `diff`; data stored chunked,
compressed and big-endian (read through libhdf5) must compare exactly as the same values
stored contiguous (read with pread)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from cli_paths import REPO_ROOT, ttrace_binary

from ttrace.bundle.checksum import file_checksum
from ttrace_testing import demo_bundles

REGRESSIONS = REPO_ROOT / "tests" / "fuzz" / "regressions" / "fuzz_rank_file"
VICTIM = "rank-00001.h5"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    demo_bundles.main([str(out)])
    return out


def refresh(bundle: Path, name: str) -> None:
    """Records the rank file's new size and CRC: only its content is hostile."""
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    size, crc = file_checksum(bundle / name)
    entry = next(e for e in manifest["ranks"] if e["file"] == name)
    entry.update(file_size=size, crc32=crc)
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ttrace_binary()), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("regression", "code", "said"),
    [
        ("libhdf5-segv-1", "index-crashed", "libhdf5 crashed reading"),
        ("libhdf5-segv-2", "index-crashed", "libhdf5 crashed reading"),
        ("libhdf5-loop-1", "index-timeout", "libhdf5 timed out reading"),
        ("libhdf5-loop-2", "index-timeout", "libhdf5 timed out reading"),
    ],
)
def test_libhdf5_crash_or_loop_is_a_typed_error(
    demo: Path, tmp_path: Path, regression: str, code: str, said: str
) -> None:
    cand = tmp_path / "candidate"
    shutil.copytree(demo / "candidate", cand)
    shutil.copyfile(REGRESSIONS / regression, cand / VICTIM)
    refresh(cand, VICTIM)
    report = tmp_path / "diff.json"
    env = {"TTRACE_INDEX_TIMEOUT_S": "2", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for args in (
        ["validate", str(cand)],
        ["diff", "--no-cache", "--json", str(report), str(demo / "reference"), str(cand)],
    ):
        start = time.monotonic()
        result = run(args, env)
        took = time.monotonic() - start
        assert result.returncode == 2, (args[0], result.returncode, result.stderr[-2000:])
        assert said in result.stderr and f"{cand / VICTIM}" in result.stderr, result.stderr
        assert took < 20, f"{args[0]} took {took:.1f} s"
    codes = [d["code"] for d in json.loads(report.read_text(encoding="utf-8"))["diagnostics"]]
    assert code in codes, codes


def rewrite_chunked_big_endian(bundle: Path) -> int:
    """Stores every float32 dataset of one rank file chunked, gzip-compressed and big-endian
    (same values, same attributes); returns how many were rewritten."""
    rewritten = 0
    with h5py.File(bundle / VICTIM, "r+") as f:
        names: list[str] = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for name in names:
            ds = f[name]
            if ds.dtype != np.float32 or ds.ndim == 0 or ds.size < 2:
                continue
            values, attrs = ds[()], dict(ds.attrs)
            del f[name]
            new = f.create_dataset(
                name, data=values.astype(">f4"), chunks=True, compression="gzip", shuffle=True
            )
            for k, v in attrs.items():
                new.attrs[k] = v
            rewritten += 1
    refresh(bundle, VICTIM)
    return rewritten


def test_chunked_big_endian_compares_as_contiguous(demo: Path, tmp_path: Path) -> None:
    cand = tmp_path / "candidate"
    shutil.copytree(demo / "candidate", cand)
    assert rewrite_chunked_big_endian(cand) >= 3
    reports = {}
    for side, bundle in (("contiguous", demo / "candidate"), ("chunked", cand)):
        out = tmp_path / f"{side}.json"
        env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
        args = ["diff", "--no-cache", "--json", str(out), str(demo / "reference"), str(bundle)]
        result = run(args, env)
        assert result.returncode in (0, 1), result.stderr[-2000:]
        reports[side] = json.loads(out.read_text(encoding="utf-8"))
    # Every tensor's statistics, bit for bit: pread of contiguous data and libhdf5's read of
    # the chunked, compressed, byte-swapped copy give the same values.
    assert reports["chunked"]["tensors"] == reports["contiguous"]["tensors"]
    assert len(reports["chunked"]["tensors"]) > 0
    summary = {k: v for k, v in reports["chunked"]["summary"].items() if k != "candidate"}
    assert summary == {
        k: v for k, v in reports["contiguous"]["summary"].items() if k != "candidate"
    }
