"""Capture overhead on the example GPT: traced over untraced training step time, side by side.

    python bench/capture_overhead.py                  # reference and 4-rank TP2xDP2 candidate
    python bench/capture_overhead.py --quick          # small model, few steps (CI: no assertions)
    python bench/capture_overhead.py --rounds 5       # medians over 5 runs of each
    python bench/capture_overhead.py --baseline OTHER_CHECKOUT   # the same runs of another
                                                      # version, interleaved with this one's

Traced and untraced steps alternate within one run (iterations 1, 3, 5... traced, 2, 4, 6...
not), so machine load hits both alike; with `--baseline` the two versions' runs alternate
too. For rank 0 of each run the table gives medians over the rounds of:
- wall: the step's elapsed time, traced over untraced (the target: at most 1.5);
- thread CPU: the training thread's own CPU time (`time.thread_time`), traced over untraced:
  what the hooks cost the training thread itself;
- process CPU: the whole process's CPU time (the writer thread included), traced over
  untraced; on a machine whose cores are all busy (several ranks per core) this is what
  the wall ratio tends to;
- page faults (minor) per traced step;
- capture MB/s: bytes of one rank's traced step over the step's wall time; writer MB/s: the
  same bytes over the writer thread's CPU time; disk MB/s: a plain file of the same size
  written with `os.write` into the same folder (no fsync: the capture does not fsync
  either), the disk's own rate as the job sees it.
Then the capture phases of this checkout per traced step (`ttrace.capture.phase_times`).
Every run's raw numbers are appended to `WORK/stats.jsonl`.
A version whose example does not report a column (an older checkout) shows `-`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = (("reference", 1), ("candidate TP2xDP2 r0", 4))


def disk_write_mb_s(folder: Path, size: int) -> float:
    """A plain sequential write of `size` bytes, dd-like (4 MiB blocks, no fsync)."""
    block = os.urandom(1 << 22)
    path = folder / "disk-probe.bin"
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        written = 0
        while written < size:
            written += os.write(fd, block)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - start
    path.unlink()
    return written / elapsed / 1e6


def run_example(code_root: Path, out: Path, model: list[str], iterations: int, nproc: int) -> dict:
    traced = ",".join(str(i) for i in range(1, iterations, 2))
    args = ["-m", "examples.gpt.train", *model, "--iterations", str(iterations)]
    args += ["--capture", f"0,{traced}", "--out", str(out), "--stats"]
    if nproc == 1:
        cmd = [sys.executable, *args, "--reference"]
    else:
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        cmd = [sys.executable, *launcher, *args, "--tp", "2", "--dp", str(nproc // 2)]
    env = dict(os.environ, PYTHONPATH=f"{code_root / 'python'}{os.pathsep}{code_root}")
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run(cmd, cwd=code_root, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("TTRACE_STATS "))
    return json.loads(line.removeprefix("TTRACE_STATS "))


def ratio(stats: dict, prefix: str) -> float | None:
    traced, untraced = stats.get(f"{prefix}_traced"), stats.get(f"{prefix}_untraced")
    return traced / untraced if traced and untraced else None


def summarize(stats: dict, disk: float) -> dict[str, float | None]:
    per_step = stats["bytes_per_traced_step"]
    writer = (stats.get("phases_s") or {}).get("writer_cpu")
    return {
        "untraced s": stats["step_s_untraced"],
        "traced s": stats["step_s_traced"],
        "wall": ratio(stats, "step_s"),
        "thread CPU": ratio(stats, "step_cpu_s"),
        "process CPU": ratio(stats, "process_cpu_s"),
        "faults/step": stats.get("page_faults_traced"),
        "capture MB/s": per_step / stats["step_s_traced"] / 1e6,
        "writer MB/s": per_step / writer / 1e6 if writer else None,
        "disk MB/s": disk,
    }


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def cell(value: float | None, width: int) -> str:
    if value is None:
        return f"{'-':>{width}}"
    return f"{value:{width}.0f}" if abs(value) >= 100 else f"{value:{width}.2f}"


def print_table(rows: list[tuple[str, dict[str, float | None]]]) -> None:
    columns = list(rows[0][1])
    print(f"{'run':34}" + "".join(f"{c:>13}" for c in columns))
    for name, values in rows:
        print(f"{name:34}" + "".join(cell(values[c], 13) for c in columns))


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--quick", action="store_true", help="small model, few steps")
    a.add_argument("--code-root", type=Path, default=ROOT, help="checkout whose capture to time")
    a.add_argument("--baseline", type=Path, default=None, help="another checkout to compare")
    a.add_argument("--rounds", type=int, default=1, help="runs of each; medians are printed")
    a.add_argument("--work", type=Path, default=None, help="folder for bundles (default: temp)")
    args = a.parse_args()
    if args.quick:
        model, iterations = ["--hidden", "32", "--layers", "2", "--seq-len", "16"], 5
    else:
        model = ["--hidden", "128", "--layers", "4", "--seq-len", "128", "--global-batch", "8"]
        iterations = 9
    work = args.work or Path(tempfile.mkdtemp(prefix="ttrace-capture-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    versions = [("this", args.code_root)]
    if args.baseline is not None:
        versions.append(("baseline", args.baseline))
    results: dict[tuple[str, str], list[dict]] = {}
    phases: dict[str, list[dict]] = {}
    for _ in range(max(1, args.rounds)):
        for name, nproc in RUNS:
            for version, root in versions:
                stats = run_example(root, work / f"bundle-{nproc}", model, iterations, nproc)
                with open(work / "stats.jsonl", "a") as raw:  # every run's numbers, as printed
                    raw.write(json.dumps({"run": name, "version": version, **stats}) + "\n")
                disk = disk_write_mb_s(work, max(int(stats["bytes_per_traced_step"]), 1 << 24))
                results.setdefault((name, version), []).append(summarize(stats, disk))
                if version == "this" and "phases_s" in stats:
                    phases.setdefault(name, []).append(stats["phases_s"])
    rows = []
    for (name, version), runs in results.items():
        label = f"{name} ({version})" if len(versions) > 1 else name
        rows.append((label, {k: median([r[k] for r in runs]) for k in runs[0]}))
    mode = "quick" if args.quick else "full"
    print(f"capture overhead ({mode}, {args.rounds} round(s), medians, rank 0)")
    for version, root in versions:
        print(f"  {version}: {root}")
    print_table(rows)
    print(
        "wall / thread CPU / process CPU: traced step over untraced; capture MB/s: bytes of "
        "one rank's traced step over its wall time; writer MB/s: over the writer's CPU time; "
        "disk MB/s: a plain file write of that size, same folder"
    )
    if phases:
        print("capture phases of this checkout, seconds per traced step (median):")
        for name, runs in phases.items():
            cells = "  ".join(f"{k} {median([r[k] for r in runs]):.3f}" for k in runs[0])
            print(f"  {name:28} {cells}")


if __name__ == "__main__":
    main()
