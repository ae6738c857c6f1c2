"""A real 4-rank gloo job killed by SIGKILL in the middle of its capture, into a folder that
held an old bundle: `ttrace validate` names the rank that stopped and its last tensor (exit
2), and `ttrace diff --partial` compares the steps every rank finished."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_paths import ttrace_binary

PYTHON_DIR = Path(__file__).resolve().parents[1]
REPO = PYTHON_DIR.parent
MODEL = ["--hidden", "32", "--layers", "2", "--seq-len", "16", "--iterations", "40"]


def env() -> dict[str, str]:
    path = os.pathsep.join([str(PYTHON_DIR), str(REPO)])
    return dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")


def records(bundle: Path) -> list[dict]:
    out = []
    for path in sorted(bundle.glob("rank-*.status.json")):
        # A record vanishes only when replaced (by rename: never half-written).
        with contextlib.suppress(OSError, json.JSONDecodeError):
            out.append(json.loads(path.read_text()))
    return out


def every_rank_finished(bundle: Path, iteration: int, world: int) -> bool:
    got = records(bundle)
    return len(got) == world and all(["nominal", iteration] in r["steps_done"] for r in got)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (torchrun starts its workers in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_mid_capture(out: Path, world: int, timeout: float = 240.0) -> None:
    """Start the 4-rank job; SIGKILL all of it once every rank finished iteration 1."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd = [*launcher, f"--nproc-per-node={world}", "-m", "examples.gpt.train"]
    cmd += ["--tp", "2", "--dp", "2", *MODEL, "--out", str(out)]
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env(), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + timeout
    try:
        while not every_rank_finished(out, 1, world):
            if proc.poll() is not None:
                raise AssertionError(f"the job ended before it was killed:\n{proc.stderr.read()}")
            if time.monotonic() > deadline:
                raise AssertionError("no rank reached iteration 1 in time")
            time.sleep(0.02)
    finally:
        workers = descendants(proc.pid)
        for pid in [*workers, proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        while any(Path(f"/proc/{pid}").exists() for pid in workers):
            time.sleep(0.05)  # gone, not merely signalled: their file locks are released


def ttrace(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ttrace_binary()), *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("interrupted")
    ref = work / "ref"
    subprocess.run(
        [sys.executable, "-m", "examples.gpt.train", "--reference", *MODEL[:-2],
         "--iterations", "4", "--perturbations", "2", "--out", str(ref)],
        cwd=REPO, env=env(), check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    cand = work / "cand"
    # An old, complete bundle in the folder: the new capture must replace it, not mix with it.
    shutil.copytree(ref, cand)
    (cand / "rank-00007.h5").write_bytes(b"an old rank file of a larger job")
    kill_mid_capture(cand, 4)
    return ref, cand


def test_killed_capture_leaves_no_stale_manifest(killed: tuple[Path, Path]) -> None:
    _, cand = killed
    assert not (cand / "manifest.json").exists()
    assert not (cand / "rank-00007.h5").exists()
    got = records(cand)
    assert [r["rank"] for r in got] == [0, 1, 2, 3]
    assert len({r["capture_id"] for r in got}) == 1
    assert all(r["state"] == "capturing" and r["tensors"] > 0 for r in got)


def test_validate_names_the_rank_and_its_last_tensor(killed: tuple[Path, Path]) -> None:
    _, cand = killed
    proc = ttrace("validate", str(cand))
    assert proc.returncode == 2, proc.stderr
    assert "is this a trace bundle" not in proc.stderr
    for r in records(cand):
        line = f"incomplete: rank {r['rank']} stopped after {r['last_tensor']}"
        assert line in proc.stderr, proc.stderr
    assert "copy" not in proc.stderr


def test_diff_refuses_without_partial(killed: tuple[Path, Path]) -> None:
    ref, cand = killed
    proc = ttrace("diff", "--no-cache", str(ref), str(cand))
    assert proc.returncode == 2
    assert "incomplete: rank" in proc.stderr


def test_diff_partial_compares_the_finished_steps(
    killed: tuple[Path, Path], tmp_path: Path
) -> None:
    ref, cand = killed
    report = tmp_path / "partial.json"
    proc = ttrace("diff", "--partial", "--no-cache", "--json", str(report), str(ref), str(cand))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "partial: compared" in proc.stderr and "left out" in proc.stderr
    done = set.intersection(
        *({i for v, i in r["steps_done"] if v == "nominal"} for r in records(cand))
    )
    assert {0, 1} <= done
    tensors = json.loads(report.read_text())["tensors"]
    assert tensors and {t["id"]["iteration"] for t in tensors} == done
