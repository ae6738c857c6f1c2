"""Capture overhead on the example GPT: traced over untraced training step time, side by side.

    python bench/capture_overhead.py            # reference and 4-rank TP2xDP2 candidate
    python bench/capture_overhead.py --quick    # small model, few steps (CI: no assertions)
    python bench/capture_overhead.py --code-root OTHER_CHECKOUT   # time another version

Traced and untraced steps alternate within one run (iterations 1, 3, 5... traced, 2, 4, 6...
not), so machine load hits both alike. The capture's write rate (bytes of a traced step over
its time) is printed next to the disk's own: a plain file of the same size written with
`os.write` in the same run, into the same folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def disk_write_mb_s(folder: Path, size: int) -> float:
    """A plain sequential write (no fsync, as the capture does not fsync either)."""
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


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--quick", action="store_true", help="small model, few steps")
    a.add_argument("--code-root", type=Path, default=ROOT, help="checkout whose capture to time")
    a.add_argument("--work", type=Path, default=None, help="folder for bundles (default: temp)")
    args = a.parse_args()
    if args.quick:
        model, iterations = ["--hidden", "32", "--layers", "2", "--seq-len", "16"], 5
    else:
        model = ["--hidden", "128", "--layers", "4", "--seq-len", "128", "--global-batch", "8"]
        iterations = 9
    work = args.work or Path(tempfile.mkdtemp(prefix="ttrace-capture-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, nproc in (("reference (1 rank)", 1), ("candidate TP2xDP2 (4 ranks)", 4)):
        stats = run_example(args.code_root, work / f"bundle-{nproc}", model, iterations, nproc)
        traced, untraced = stats["step_s_traced"], stats["step_s_untraced"]
        per_step = stats["bytes_per_traced_step"]
        disk = disk_write_mb_s(work, max(int(per_step), 1 << 24))
        rows.append((name, untraced, traced, traced / untraced, per_step / traced / 1e6, disk))
    print(f"capture overhead ({args.code_root}, {'quick' if args.quick else 'full'})")
    print(f"{'run':30} {'untraced s':>10} {'traced s':>9} {'ratio':>6} {'capture MB/s':>13} "
          f"{'disk MB/s':>10}")  # fmt: skip
    for name, untraced, traced, ratio, rate, disk in rows:
        print(f"{name:30} {untraced:10.3f} {traced:9.3f} {ratio:6.2f} {rate:13.1f} {disk:10.1f}")
    print(
        "ratio: traced step time / untraced (rank 0); capture MB/s: bytes of one rank's "
        "traced step / its time; disk MB/s: a plain file write of that size, same folder"
    )


if __name__ == "__main__":
    main()
