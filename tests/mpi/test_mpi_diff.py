"""`ttrace-mpi diff` against `ttrace diff` on the demo pair, with real MPI processes.

The report (JSON, Markdown), the summary cache entry, the printed summary and the exit code
must be the ones `ttrace diff` gives, for 1, 2 and 3 processes; a missing rank file is
reported as `ttrace diff` reports it; a process that sees other files than rank 0 fails the
run by rank and file, and no report is written.

Runs the built binaries from $TTRACE_BIN_DIR and the launcher $TTRACE_MPIEXEC (set by CTest).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BIN_DIR = os.environ.get("TTRACE_BIN_DIR")
MPIEXEC = os.environ.get("TTRACE_MPIEXEC")
pytestmark = pytest.mark.skipif(
    not BIN_DIR or not MPIEXEC, reason="TTRACE_BIN_DIR or TTRACE_MPIEXEC is not set"
)

# Root in a container, and more processes than cores on a small CI machine.
OPEN_MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe"]
# Keys of timing fields, which may differ between runs (none are written today).
TIMING_KEYS = ("seconds", "elapsed", "timing")


def run(args: list[str], cache: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def ttrace_diff(*args: str | Path, cache: Path) -> subprocess.CompletedProcess[str]:
    assert BIN_DIR is not None
    return run([str(Path(BIN_DIR) / "ttrace"), "diff", *map(str, args)], cache)


def mpi_diff(n: int, *args: str | Path, cache: Path) -> subprocess.CompletedProcess[str]:
    assert BIN_DIR is not None and MPIEXEC is not None
    command = [MPIEXEC, *OPEN_MPI_FLAGS, "-n", str(n), str(Path(BIN_DIR) / "ttrace-mpi")]
    return run([*command, "diff", *map(str, args)], cache)


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: without_timings(v) for k, v in value.items() if not any(t in k for t in TIMING_KEYS)
        }
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def assert_same_json(single: Path, mpi: Path) -> None:
    a, b = single.read_text(), mpi.read_text()
    if any(f'"{t}' in a for t in TIMING_KEYS):
        assert without_timings(json.loads(a)) == without_timings(json.loads(b))
    else:
        assert a == b  # byte for byte


def cache_entries(cache: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((cache / "ttrace").glob("diff-*.json"))}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    subprocess.run(
        [sys.executable, "-m", "ttrace_testing.demo_bundles", str(root), "--inject-bug"],
        check=True,
        capture_output=True,
    )
    return root


@pytest.fixture(scope="module")
def single(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single")
    done = ttrace_diff(
        "--json", out / "diff.json", "--markdown", out / "diff.md",
        demo / "reference", demo / "candidate", cache=out / "cache",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the injected bug
    (out / "stdout.txt").write_text(done.stdout)
    return out


@pytest.mark.parametrize("n", [1, 2, 3])
def test_same_report_and_cache_as_ttrace_diff(
    n: int, demo: Path, single: Path, tmp_path: Path
) -> None:
    done = mpi_diff(
        n, "--json", tmp_path / "diff.json", "--markdown", tmp_path / "diff.md",
        demo / "reference", demo / "candidate", cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert_same_json(single / "diff.json", tmp_path / "diff.json")
    assert (tmp_path / "diff.md").read_bytes() == (single / "diff.md").read_bytes()
    assert done.stdout == (single / "stdout.txt").read_text()
    entries = cache_entries(tmp_path / "cache")
    assert entries and entries == cache_entries(single / "cache")
    # Progress comes from rank 0 alone.
    assert done.stderr.count("processes (largest share") == 1


def test_cached_answer_needs_no_comparison(demo: Path, single: Path, tmp_path: Path) -> None:
    shutil.copytree(single / "cache", tmp_path / "cache")
    done = mpi_diff(
        2, "--json", tmp_path / "diff.json", demo / "reference", demo / "candidate",
        cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "answered from the summary cache" in done.stderr
    assert_same_json(single / "diff.json", tmp_path / "diff.json")


def test_missing_rank_file_reported_as_ttrace_diff(demo: Path, tmp_path: Path) -> None:
    candidate = tmp_path / "candidate"
    shutil.copytree(demo / "candidate", candidate)
    (candidate / "rank-00002.h5").unlink()
    one = ttrace_diff(
        "--no-cache", "--json", tmp_path / "single.json", demo / "reference", candidate,
        cache=tmp_path / "cache",
    )  # fmt: skip
    many = mpi_diff(
        3, "--no-cache", "--json", tmp_path / "mpi.json", demo / "reference", candidate,
        cache=tmp_path / "cache",
    )  # fmt: skip
    assert one.returncode == 2, one.stderr
    assert many.returncode == one.returncode, many.stderr
    codes = [d["code"] for d in json.loads((tmp_path / "mpi.json").read_text())["diagnostics"]]
    assert "missing-rank-file" in codes
    assert_same_json(tmp_path / "single.json", tmp_path / "mpi.json")
    assert many.stdout == one.stdout


def test_process_seeing_other_files_fails_the_run(demo: Path, tmp_path: Path) -> None:
    # Rank 1 runs in a directory whose candidate lacks a rank file (a node with a stale copy).
    good, stale = tmp_path / "good", tmp_path / "stale"
    for where in (good, stale):
        shutil.copytree(demo / "reference", where / "reference")
        shutil.copytree(demo / "candidate", where / "candidate")
    (stale / "candidate" / "rank-00001.h5").unlink()
    assert BIN_DIR is not None and MPIEXEC is not None
    program = [str(Path(BIN_DIR) / "ttrace-mpi"), "diff", "--no-cache", "--json",
               str(tmp_path / "diff.json"), "reference", "candidate"]  # fmt: skip
    done = run(
        [MPIEXEC, *OPEN_MPI_FLAGS, "-n", "1", "-wdir", str(good), *program, ":",
         "-n", "1", "-wdir", str(stale), *program],
        cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "rank 1 opened the bundles differently" in done.stderr
    assert "rank-00001.h5" in done.stderr
    assert not (tmp_path / "diff.json").exists()
