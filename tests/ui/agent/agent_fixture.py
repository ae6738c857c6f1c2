"""Start and stop the localize agents the explorer's localize test talks to.

    python agent_fixture.py WORKDIR start   # reference + two serving 4-rank candidates
    python agent_fixture.py WORKDIR stop    # shutdown request to each, then kill what is left

The candidates are the example GPT as TP2 x DP2 with sequence parallelism under torchrun
(gloo on loopback), as python/tests/test_agent_replay.py starts them:
- `demo`: the demo's bug, sp-norm-grad-not-reduced (the first divergence is iteration 0's
  gradient reduction of the sequence-parallel norms);
- `probe`: a forward bug in one module, layers.1.mlp.linear_fc1's output scaled by 1 + 1e-2 on
  rank 0 (introduced there, inherited by everything after it).
Each writes WORKDIR/NAME/{bundle,endpoint,token,job.log,pgid}. `start` returns once both serve;
`stop` always ends them (shutdown request, then SIGKILL of the process group after a timeout).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ttrace_testing.agent_client import AgentClient
from ttrace_testing.agent_job import ServingJob, env, train_command

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


CANDIDATES = {
    "demo": ("--tp", "2", "--dp", "2", "--inject", "sp-norm-grad-not-reduced"),
    "probe": ("--tp", "2", "--dp", "2", "--probe-delta", "layers.1.mlp.linear_fc1:0.01"),
}
IDLE_S = 900  # a backstop: an agent nobody stops exits on its own


def start(work: Path) -> None:
    reference = work / "reference"
    if not (reference / "manifest.json").exists():
        cmd = train_command(reference, 1, "--reference", "--perturbations", "1")
        subprocess.run(cmd, cwd=REPO, env=env(), check=True, capture_output=True, timeout=600)
    jobs = {}
    for name, args in CANDIDATES.items():
        stop_one(work / name)  # a job left from an earlier run, if any
        shutil.rmtree(work / name, ignore_errors=True)  # its endpoint would look like ours
        job = ServingJob(work / name, reference, 4, *args, idle=IDLE_S)
        (work / name / "pgid").write_text(f"{job.proc.pid}\n")
        jobs[name] = job
    try:
        for name, job in jobs.items():
            job.wait_serving(timeout=600)
            # torchrun gives each worker a process group of its own: remember them to kill.
            (work / name / "workers").write_text(" ".join(map(str, job.workers())) + "\n")
    except BaseException:
        stop(work)
        raise
    print("agents serving:", {n: j.endpoint_file.read_text().strip() for n, j in jobs.items()})


def alive(pid: int) -> bool:
    """Running, not a zombie: torchrun outlives `start`, so nobody here reaps it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop_one(directory: Path) -> None:
    pgid_file = directory / "pgid"
    if not pgid_file.exists():
        return
    pgid = int(pgid_file.read_text())
    try:
        endpoint = (directory / "endpoint").read_text().strip()
        client = AgentClient(endpoint, (directory / "token").read_text().strip(), timeout_s=10)
        client.call("shutdown")
        client.close()
    except (OSError, TimeoutError, ValueError) as e:
        print(f"{directory.name}: shutdown request failed ({e}); killing", file=sys.stderr)
    # The ranks end on the shutdown request; torchrun may linger after them, and is killed.
    workers = directory / "workers"
    ranks = [int(p) for p in workers.read_text().split()] if workers.exists() else [pgid]
    deadline = time.monotonic() + 30
    while any(map(alive, ranks)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive(pgid):
        os.killpg(pgid, signal.SIGKILL)
    kill_workers(workers)
    pgid_file.unlink()


def kill_workers(workers_file: Path) -> None:
    """Workers that outlived their torchrun (it was killed) are killed by pid, if the pid is
    still one of this job's ranks."""
    if not workers_file.exists():
        return
    for pid in map(int, workers_file.read_text().split()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"examples.gpt.train" in cmdline and str(workers_file.parent).encode() in cmdline:
            os.kill(pid, signal.SIGKILL)


def stop(work: Path) -> None:
    for name in CANDIDATES:
        stop_one(work / name)


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in ("start", "stop"):
        raise SystemExit(__doc__)
    work = Path(sys.argv[1])
    work.mkdir(parents=True, exist_ok=True)
    start(work) if sys.argv[2] == "start" else stop(work)


if __name__ == "__main__":
    main()
