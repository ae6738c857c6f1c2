"""Capture overhead on the example GPT: traced over untraced training step, and the
capture's writer against a plain write of the same bytes, side by side in one run.

    python bench/capture_overhead.py                  # the demo's model and a capture-heavy one
    python bench/capture_overhead.py --configs heavy --runs reference
    python bench/capture_overhead.py --quick          # small model, few steps (CI: no assertions)
    python bench/capture_overhead.py --rounds 3       # medians over 3 runs of each
    python bench/capture_overhead.py --baseline OTHER_CHECKOUT   # the same runs of another
                                                      # version, interleaved with this one's

Configurations (`--configs`): `example`, the example GPT as `scripts/demo.sh` runs it
(hidden 32, 4 layers, sequence 16, global batch 4, 2 micro-batches); `bench`, the table of
earlier versions (hidden 128, 4 layers, sequence 128, global batch 8); `heavy`, a capture-
heavy one (hidden 256, 8 layers, sequence 128, global batch 8: big activations, many
modules). Each as a reference (one process) and a 4-rank TP2xDP2 candidate (`--runs`).

Traced and untraced steps alternate within one run (iterations 1, 3, 5... traced, 2, 4, 6...
not), so machine load hits both alike; with `--baseline` the two versions' runs alternate
too. For rank 0 of each run the first table gives medians over the rounds of:
- wall: the step's elapsed time, traced over untraced (the target: at most 1.3);
- thread CPU: the training thread's own CPU time (`time.thread_time`), traced over untraced:
  what the hooks cost the training thread itself;
- process CPU: the whole process's CPU time (the writer thread included), traced over
  untraced; on a machine whose cores are all busy (several ranks per core) this is what
  the wall ratio tends to;
- page faults (minor) per traced step;
- capture MB/s: bytes of one rank's traced step over the step's wall time.
The second table (`writer_throughput.py`): one traced step of rank 0, as captured, written
again into the same folder by the capture's writer (queued as hooks queue it, closed:
fsync and checksum included) and plainly (`os.write` of the same bytes into one file,
fsync), alternating, medians of `--write-rounds` (the target: writer >= 0.8x plain).
Then the capture phases of this checkout per traced step (`ttrace.capture.phase_times`),
and the load average before and after. Every run's raw numbers are appended to
`WORK/stats.jsonl`. A version whose example does not report a column shows `-`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = {"reference": ("reference", 1), "candidate": ("candidate TP2xDP2 r0", 4)}
CONFIGS = {
    "example": ["--hidden", "32", "--layers", "4", "--seq-len", "16", "--global-batch", "4"],
    "bench": ["--hidden", "128", "--layers", "4", "--seq-len", "128", "--global-batch", "8"],
    "heavy": ["--hidden", "256", "--layers", "8", "--seq-len", "128", "--global-batch", "8"],
    "quick": ["--hidden", "32", "--layers", "2", "--seq-len", "16"],
}


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


def compare_writer(code_root: Path, rank_file: Path, work: Path, rounds: int) -> dict:
    """`writer_throughput.py` under `code_root`'s package: its writer against a plain write."""
    env = dict(os.environ, PYTHONPATH=f"{code_root / 'python'}{os.pathsep}{code_root}")
    script = Path(__file__).resolve().parent / "writer_throughput.py"
    cmd = [sys.executable, str(script), str(rank_file), "1", str(work), str(rounds)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ratio(stats: dict, prefix: str) -> float | None:
    traced, untraced = stats.get(f"{prefix}_traced"), stats.get(f"{prefix}_untraced")
    return traced / untraced if traced and untraced else None


def summarize(stats: dict) -> dict[str, float | None]:
    per_step = stats["bytes_per_traced_step"]
    return {
        "untraced s": stats["step_s_untraced"],
        "traced s": stats["step_s_traced"],
        "wall": ratio(stats, "step_s"),
        "thread CPU": ratio(stats, "step_cpu_s"),
        "process CPU": ratio(stats, "process_cpu_s"),
        "faults/step": stats.get("page_faults_traced"),
        "capture MB/s": per_step / stats["step_s_traced"] / 1e6,
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
    print(f"{'run':44}" + "".join(f"{c:>13}" for c in columns))
    for name, values in rows:
        print(f"{name:44}" + "".join(cell(values[c], 13) for c in columns))


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--quick", action="store_true", help="small model, few steps")
    a.add_argument("--configs", default="example,heavy", help=f"of {','.join(CONFIGS)}")
    a.add_argument("--runs", default="reference,candidate", help="reference, candidate")
    a.add_argument("--code-root", type=Path, default=ROOT, help="checkout whose capture to time")
    a.add_argument("--baseline", type=Path, default=None, help="another checkout to compare")
    a.add_argument("--rounds", type=int, default=1, help="runs of each; medians are printed")
    a.add_argument("--write-rounds", type=int, default=3, help="writer vs plain write rounds")
    a.add_argument("--work", type=Path, default=None, help="folder for bundles (default: temp)")
    args = a.parse_args()
    configs = ["quick"] if args.quick else args.configs.split(",")
    iterations = 5 if args.quick else 9
    work = args.work or Path(tempfile.mkdtemp(prefix="ttrace-capture-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    versions = [("this", args.code_root)]
    if args.baseline is not None:
        versions.append(("baseline", args.baseline))
    load_before = load()
    results: dict[tuple[str, str], list[dict]] = {}
    writes: dict[tuple[str, str], dict[str, float]] = {}
    phases: dict[str, list[dict]] = {}
    for _ in range(max(1, args.rounds)):
        for config in configs:
            for run in args.runs.split(","):
                name, nproc = RUNS[run]
                label = f"{config}: {name}"
                for version, root in versions:
                    out = work / f"bundle-{config}-{nproc}-{version}"
                    stats = run_example(root, out, CONFIGS[config], iterations, nproc)
                    with open(work / "stats.jsonl", "a") as raw:  # every run's numbers
                        raw.write(json.dumps({"run": label, "version": version, **stats}) + "\n")
                    results.setdefault((label, version), []).append(summarize(stats))
                    if version == "this" and "phases_s" in stats:
                        phases.setdefault(label, []).append(stats["phases_s"])
                    if (label, version) not in writes:  # the same bytes each round
                        rank0 = out / "rank-00000.h5"
                        writes[(label, version)] = compare_writer(
                            root, rank0, work / "writes", args.write_rounds
                        )
    print_results(args, versions, results, writes, phases)
    print(f"{load_before} before, {load()} after (2 cores: above 2, others share them)")


def print_results(
    args: argparse.Namespace,
    versions: list[tuple[str, Path]],
    results: dict[tuple[str, str], list[dict]],
    writes: dict[tuple[str, str], dict[str, float]],
    phases: dict[str, list[dict]],
) -> None:
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
        "wall / thread CPU / process CPU: traced step over untraced (target wall <= 1.3); "
        "capture MB/s: bytes of one rank's traced step over its wall time"
    )
    print(
        f"\nwriter against a plain write of one traced step, fsync at the end, median of "
        f"{args.write_rounds} (target >= 0.8):"
    )
    print_table(
        [
            (f"{name} ({version})" if len(versions) > 1 else name, w)
            for (name, version), w in writes.items()
        ]
    )
    if phases:
        print("\ncapture phases of this checkout, seconds per traced step (median):")
        for name, runs in phases.items():
            cells = "  ".join(f"{k} {median([r[k] for r in runs]):.3f}" for k in runs[0])
            print(f"  {name:40} {cells}")


if __name__ == "__main__":
    main()
