"""Capture on a bad day, with real gloo jobs (one process per rank, started here as srun
would start them) and the real CLI: a disk that fills during the capture, one rank killed
with SIGKILL while the others live, a job that ends without `close()`, and a file system
without file locks (as far as one can be had here: locking disabled by the environment)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import h5py
import pytest
import torch
from bad_day_job import EXIT_RANKS_MISSING
from cli_paths import ttrace_binary

import ttrace.capture as ttc
from ttrace.bundle import BundleWriter, TensorKey
from ttrace.bundle.rank_status import RankStatus, read_status
from ttrace.bundle.writer import TEST_DISK_BYTES_ENV
from ttrace.capture.async_writer import AsyncWriter
from ttrace.capture.write_error import WriteError
from ttrace_testing.ports import free_port

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parents[1]
JOB = TESTS / "bad_day_job.py"


@dataclass
class Rank:
    code: int
    out: str


def run_job(world: int, out: Path, *args: str, env: dict[str, str] | None = None) -> list[Rank]:
    """Start `world` ranks of bad_day_job.py; their exit codes and output (stdout+stderr)."""
    base = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO / "python"), str(REPO)]),
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        WORLD_SIZE=str(world),
        **(env or {}),
    )
    procs = [
        subprocess.Popen(
            [sys.executable, str(JOB), "--out", str(out), *args],
            env=dict(base, RANK=str(r), LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(world)
    ]
    try:
        return [Rank(p.wait(timeout=120), p.stdout.read()) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def ttrace(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ttrace_binary()), *args], capture_output=True, text=True, timeout=120
    )


def records(bundle: Path) -> dict[int, dict]:
    out = {}
    for path in sorted(bundle.glob("rank-*.status.json")):
        record = json.loads(path.read_text())
        out[record["rank"]] = record
    return out


def datasets(path: Path) -> int:
    found: list[str] = []
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None
        )
    return len(found)


def compares(reference: Path, candidate: Path, tmp: Path) -> tuple[int, list[dict]]:
    """`ttrace diff --partial`: its exit code and the tensors it compared."""
    report = tmp / f"{candidate.name}.json"
    proc = ttrace(
        "diff", "--partial", "--no-cache", "--json", str(report), str(reference), str(candidate)
    )
    assert report.exists(), proc.stdout + proc.stderr
    assert "partial: compared" in proc.stderr, proc.stdout + proc.stderr
    print(proc.stderr[-3000:])
    return proc.returncode, json.loads(report.read_text())["tensors"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bad_day") / "ref"
    (ref,) = run_job(1, out, "--width", "128", "--steps", "6")
    assert ref.code == 0, ref.out
    return out


@contextlib.contextmanager
def small_disk(where: Path, size_kib: int) -> Iterator[dict[str, str]]:
    """A file system of `size_kib` at `where` (a tmpfs: this needs root); where mounting is
    refused, the writer's documented test hook fills the "disk" at that many bytes of
    tensors per rank instead. Yields the environment for the job."""
    where.mkdir(parents=True)
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(where)],
        capture_output=True,
    )  # fmt: skip
    if mount.returncode != 0:
        print(f"tmpfs refused ({mount.stderr!r}): ENOSPC from {TEST_DISK_BYTES_ENV}")
        yield {TEST_DISK_BYTES_ENV: str(size_kib * 1024 // 2)}
        return
    try:
        yield {}
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


# --- 1. a full disk ----------------------------------------------------------------------


def test_full_disk_stops_capture_and_training_goes_on(reference: Path, tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    with small_disk(disk, 1536) as env:
        cand = disk / "cand"
        ranks = run_job(
            2, cand, "--width", "128", "--steps", "6", "--on-write-error", "warn", env=env
        )
        for r, rank in enumerate(ranks):
            assert rank.code == 0 and f"rank {r}: trained 6 steps" in rank.out, rank.out
            assert "Exception ignored" not in rank.out, rank.out  # no failure HDF5 only prints
        failed = {r: rec for r, rec in records(cand).items() if rec["state"] == "failed"}
        assert failed, records(cand)
        for r, record in failed.items():
            file = cand / record["file"]
            # A tensor's write or a step's flush, whichever met the full disk first.
            message = f"ttrace: rank {r}: disk full (ENOSPC) "
            said = next(line for line in ranks[r].out.splitlines() if line.startswith(message))
            print(said)  # quoted in docs/capture.md
            assert said.startswith((f"{message}writing /nominal/", f"{message}flushing the "))
            assert f", to {file}: [Errno 28] No space left on device; capture stopped on" in said
            kept = f"{record['tensors']} tensors ({record['bytes']} bytes) of its last flush"
            assert f"{file.name} keeps the {kept}" in said
            assert said.endswith("training continues (Tracer(on_write_error='warn'))")
            assert said.startswith(f"ttrace: rank {r}: {record['error']}; capture stopped")
            # The file is its last flush, readable, holding what the record says.
            assert datasets(file) == record["tensors"]
        assert not (cand / "manifest.json").exists()

        proc = ttrace("validate", str(cand))
        assert proc.returncode == 2, proc.stderr
        for r in failed:
            assert f"incomplete: rank {r} failed writing and stopped after" in proc.stderr
        assert f"warning: {cand}: usable: " in proc.stderr, proc.stderr
        code, tensors = compares(reference, cand, tmp_path)
        assert code == 0 and tensors, "the finished steps compare clean"
        done = set.intersection(
            *({i for _, i in rec["steps_done"]} for rec in records(cand).values())
        )
        assert {t["id"]["iteration"] for t in tensors} == done


def test_full_disk_stops_training_when_configured(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    with small_disk(disk, 1024) as env:
        out = disk / "ref"
        # The writer runs behind training by up to the tracer's memory budget: with the
        # default (1 GiB) this whole job may be queued before the disk fills, and the error
        # then comes at close(). A budget of two steps makes training wait on the writer.
        cap = ("--memory-cap-kib", "800")
        (rank,) = run_job(1, out, "--width", "128", "--steps", "6", *cap, env=env)
        assert rank.code != 0 and "trained" not in rank.out, rank.out
        assert (
            "ttrace.capture.write_error.WriteError: ttrace: rank 0: disk full (ENOSPC)" in rank.out
        )
        assert "raised in the training job (Tracer(on_write_error='raise'))" in rank.out
        record = records(out)[0]
        assert record["state"] == "failed"
        assert datasets(out / "rank-00000.h5") == record["tensors"]


def test_refused_tensor_keeps_the_file_as_written(tmp_path: Path) -> None:
    """A write refused before it touches the file (here: a tensor written twice) is no file
    system failure: the file is not cut back and keeps every tensor written before it."""
    out = tmp_path / "b"
    status = RankStatus("id", 0, 1, "reference", {}, {}, "fp32", ["nominal"])
    writer = AsyncWriter(BundleWriter(out, 0, 1, "reference"), status=status)
    first = TensorKey("nominal", 0, 0, "fc", "forward_output", "0")
    writer.put(first, torch.ones(3), None)
    writer.put(TensorKey("nominal", 0, 0, "fc", "forward_input", "0"), torch.ones(3), None)
    writer.put(first, torch.ones(3), None)
    with pytest.raises(WriteError) as caught:
        writer.flush()
    assert caught.value.code == "write_failed"
    assert f"write failed writing {first.path} (12 bytes), to {out / 'rank-00000.h5'}: " in str(
        caught.value
    )
    assert "keeps the 2 tensors (24 bytes) written before" in str(caught.value)
    with pytest.raises(WriteError):
        writer.close()
    assert datasets(out / "rank-00000.h5") == 2
    assert read_status(out / "rank-00000.status.json")["state"] == "failed"


def test_training_on_after_a_full_disk_copies_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With on_write_error="warn", once the failure is known the hooks stop copying tensors:
    training goes on at its own speed. (The documented ENOSPC hook: one process, no mount.)"""
    monkeypatch.setenv(TEST_DISK_BYTES_ENV, str(64 << 10))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = ttc.Tracer(model, opt, tmp_path / "b", role="reference", on_write_error="warn")

    def step(it: int) -> None:
        with tracer.step(it):
            model(torch.randn(4, 2, 64)).square().mean().backward()
            opt.step()
            opt.zero_grad()

    for it in range(2):
        step(it)
    tracer.flush()  # the writer has met the full "disk" (warn: nothing raised)
    assert tracer.writer.error is not None and tracer.writer.error.code == "disk_full"
    step(2)  # its first hook learns of the failure
    copied = tracer.phases.snapshot()["host_copy"]
    step(3)
    assert tracer.state.stopped and tracer.phases.snapshot()["host_copy"] == copied
    tracer.close()  # no raise: the job goes on
    record = read_status(tmp_path / "b" / "rank-00000.status.json")
    assert record["state"] == "failed" and record["error"].startswith("disk full (ENOSPC)")
    assert datasets(tmp_path / "b" / "rank-00000.h5") == record["tensors"]


# --- 2. one rank killed while the others live ---------------------------------------------


def test_killed_rank_is_named_and_the_others_stay_intact(reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    timeout = 3
    start = time.monotonic()
    ranks = run_job(
        3, cand, "--width", "128", "--steps", "4", "--scenario", "kill", "--timeout", str(timeout)
    )
    elapsed = time.monotonic() - start
    assert ranks[2].code == -signal.SIGKILL
    got = records(cand)
    victim = got[2]
    # Killed while its writer still wrote its last step.
    assert victim["state"] == "capturing" and ["nominal", 3] not in victim["steps_done"]
    for r in (0, 1):
        assert ranks[r].code == EXIT_RANKS_MISSING, ranks[r].out
        said = ranks[r].out
        print(said)
        assert (
            f"ttrace: rank {r}: close() gave up after {timeout} s waiting for rank 2 (killed, or "
            "still busy: never reached close()); this rank's file is closed and intact; "
            f"manifest.json not written: `ttrace validate {cand}` names what is usable" in said
        ), said
        on_disk = f"{victim['tensors']} tensors on disk, last {victim['last_tensor']}"
        assert f"  rank 2: its status record says capturing, {on_disk}" in said
        assert got[r]["state"] == "closed"
        took = float(said.split(f"rank {r}: close() gave up after ")[-1].split(" s")[0])
        assert timeout <= took < timeout + 10, "bounded by the timeout, not by gloo's"
        assert datasets(cand / got[r]["file"]) == got[r]["tensors"]
    assert elapsed < 60, "close() gave up in bounded time"
    assert not (cand / "manifest.json").exists()

    proc = ttrace("validate", str(cand))
    assert proc.returncode == 2
    assert f"incomplete: rank 2 stopped after {victim['last_tensor']}" in proc.stderr, proc.stderr
    assert "incomplete: rank 0" not in proc.stderr and "incomplete: rank 1" not in proc.stderr
    assert "usable: " in proc.stderr
    code, tensors = compares(reference, cand, tmp_path)
    done = {i for v, i in victim["steps_done"] if v == "nominal"}
    assert code == 0 and {t["id"]["iteration"] for t in tensors} == done


# --- 3. a job that ends without close() ---------------------------------------------------


def test_job_ending_without_close_leaves_usable_files(reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    ranks = run_job(2, cand, "--width", "128", "--steps", "4", "--scenario", "no-close")
    got = records(cand)
    for r, rank in enumerate(ranks):
        assert rank.code == 0, rank.out
        file = cand / got[r]["file"]
        assert f"ttrace: rank {r} exited without tracer.close(): {file} closed at exit" in rank.out
        assert got[r]["state"] == "exited"
        assert got[r]["steps_done"] == [["nominal", i] for i in range(4)]
        assert datasets(cand / got[r]["file"]) == got[r]["tensors"]
    proc = ttrace("validate", str(cand))
    assert proc.returncode == 2
    for r in range(2):
        assert (
            f"incomplete: rank {r} exited without tracer.close() (its file is closed and complete"
            in proc.stderr
        )
    diff = ttrace("diff", "--no-cache", str(reference), str(cand))
    assert diff.returncode == 2 and "exited without tracer.close()" in diff.stderr
    code, tensors = compares(reference, cand, tmp_path)
    assert code == 0 and {t["id"]["iteration"] for t in tensors} == set(range(4))


# --- 4. a file system without locks -------------------------------------------------------


def test_bundle_without_file_locks(tmp_path: Path) -> None:
    """HDF5_USE_FILE_LOCKING=FALSE (what a user sets on a file system whose locks hang or
    fail) reaches the writer, the C++ reader and the h5py reader: with every rank file
    locked exclusively by another process, as a stuck NFS lock would leave it, the capture,
    `ttrace validate` and `BundleReader` still succeed. With locking on, the readers fail
    at once, naming the file, and never wait."""
    out = tmp_path / "b"
    this_ttrace = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    no_locks = dict(this_ttrace, HDF5_USE_FILE_LOCKING="FALSE")
    (rank,) = run_job(1, out, "--steps", "2", env={"HDF5_USE_FILE_LOCKING": "FALSE"})
    assert rank.code == 0, rank.out
    read = [sys.executable, "-c", READ_ALL, str(out)]
    with open(out / "rank-00000.h5", "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        validate = [str(ttrace_binary()), "validate", str(out)]
        for cmd in (validate, read):
            proc = subprocess.run(cmd, capture_output=True, text=True, env=no_locks, timeout=60)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        start = time.monotonic()
        # Past the racy window the first `validate` may have indexed the file into the rank
        # file cache, and a cached index is not read again: these must open the file.
        locking = dict(this_ttrace, TTRACE_NO_RANK_FILE_CACHE="1")
        for cmd in (validate, read):
            proc = subprocess.run(cmd, capture_output=True, text=True, env=locking, timeout=60)
            assert proc.returncode != 0 and "rank-00000.h5" in proc.stderr, proc.stderr
        assert time.monotonic() - start < 30
    assert ttrace("validate", str(out)).returncode == 0


# Reads every tensor of a bundle with the h5py reader.
READ_ALL = """
import sys
from ttrace.bundle.reader import BundleReader
with BundleReader(sys.argv[1]) as bundle:
    for identity in bundle.identities():
        bundle.merged(identity)
"""
