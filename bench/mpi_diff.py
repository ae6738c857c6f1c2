"""Per-process throughput of `ttrace-mpi diff` against `ttrace diff`, on the demo pair and a
synthetic pair, for a few process counts; checks every run's JSON against `ttrace diff`'s.

usage: python bench/mpi_diff.py [--procs 1,2] [--repeat 3] [--pairs demo,synthetic]
                                [--tensors N] [--elements M] [--data DIR]

Each process prints (through rank 0) the bytes of shards it compared and its wall time; the
table shows, per process count, the fastest of `--repeat` runs: the job's wall time (mpirun
start to exit) and each process's MB/s. Needs Open MPI's mpirun (as root: the two
OMPI_ALLOW_RUN_AS_ROOT variables are set here).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from diff_memory import write_pair  # beside this script, on the path of a script run

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "bin"
SHARE = re.compile(r"rank (\d+): (\d+) tensors, .* in ([\d.]+) s \(([\d.]+) MB/s\)")
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def make_pairs(data: Path, names: list[str], tensors: int, elements: int) -> dict[str, Path]:
    pairs = {}
    for name in names:
        root = data / name
        if not (root / "candidate" / "manifest.json").exists():
            if name == "demo":
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "ttrace_testing.demo_bundles",
                        str(root),
                        "--inject-bug",
                    ],
                    check=True,
                    capture_output=True,
                )
            else:
                write_pair(root, tensors, elements, seed=7)
        pairs[name] = root
    return pairs


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=600)
    return time.perf_counter() - start, done


def bundle_mb(root: Path) -> float:
    return sum(f.stat().st_size for f in root.rglob("*.h5")) / 1e6


def measure(root: Path, procs: list[int], repeat: int, out: Path) -> list[str]:
    ref, cand = str(root / "reference"), str(root / "candidate")
    single = out / f"{root.name}-single.json"
    wall, done = timed(
        [str(BIN / "ttrace"), "diff", "--no-cache", "--json", str(single), ref, cand]
    )
    assert done.returncode in (0, 1), done.stderr
    rows = [f"| {root.name} | {bundle_mb(root):.1f} | `ttrace diff` | {wall:.2f} | | |"]
    for n in procs:
        best: tuple[float, list[tuple[int, int, float, float]], bool] | None = None
        for _ in range(repeat):
            mine = out / f"{root.name}-mpi{n}.json"
            launcher = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(n)]
            wall, done = timed(
                [*launcher, str(BIN / "ttrace-mpi"), "diff", "--no-cache", "--json", str(mine),
                 ref, cand]
            )  # fmt: skip
            assert done.returncode in (0, 1), done.stderr
            shares = [
                (int(r), int(t), float(s), float(mb)) for r, t, s, mb in SHARE.findall(done.stderr)
            ]
            assert len(shares) == n, done.stderr
            same = mine.read_bytes() == single.read_bytes()
            if best is None or wall < best[0]:
                best = (wall, shares, same)
        assert best is not None
        wall, shares, same = best
        rates = ", ".join(f"{mb:.0f}" for _, _, _, mb in sorted(shares))
        tensors = "/".join(str(t) for _, t, _, _ in sorted(shares))
        rows.append(
            f"| {root.name} | {bundle_mb(root):.1f} | `ttrace-mpi` -n {n} | {wall:.2f} "
            f"| {tensors}: {rates} | {'yes' if same else 'NO'} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="1,2", help="process counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per count (fastest kept)")
    parser.add_argument("--pairs", default="demo,synthetic", help="demo and/or synthetic")
    parser.add_argument("--tensors", type=int, default=16, help="synthetic pair: tensors")
    parser.add_argument("--elements", type=int, default=1 << 20, help="elements per tensor")
    parser.add_argument("--data", type=Path, default=None, help="keep the pairs here")
    args = parser.parse_args()
    procs = [int(p) for p in args.procs.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or Path(tmp)
        pairs = make_pairs(data, args.pairs.split(","), args.tensors, args.elements)
        print("| pair | MB of rank files | run | wall s | tensors per process: MB/s each "
              "| JSON as `ttrace diff` |")  # fmt: skip
        print("|---|---|---|---|---|---|")
        for root in pairs.values():
            for row in measure(root, procs, args.repeat, Path(tmp)):
                print(row)


if __name__ == "__main__":
    main()
