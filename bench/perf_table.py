"""`ttrace diff` against the floors it must be judged by, side by side in one run: the pure-read
floor (build/bench/read_floor, every dataset read once through libhdf5) warm and cold, the
numpy + h5py baseline (bench/numpy_diff.py, checked to agree), and 1 vs 2 threads; time and
peak memory per GB of bundle at each size. Ratios are the result; absolute times are context.

Bundle pairs are captures of the example GPT (fp32, candidate TP2 x DP2 with sequence
parallelism, 2 iterations, reference with 2 perturbed variants), made by `--generate` with
a fixed recipe per size and kept outside the repository (--data).

usage: python bench/perf_table.py [--quick] [--sizes small,medium,large,xlarge] [--data DIR]
       [--repeat N] [--numpy-sizes medium]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build"  # --build replaces it
PY = sys.executable

# name -> example arguments (hidden, seq-len, global-batch); bundle bytes grow with each.
RECIPES: dict[str, list[str]] = {
    "small": ["--hidden", "128", "--seq-len", "64", "--global-batch", "8"],
    "medium": ["--hidden", "256", "--seq-len", "128", "--global-batch", "8"],
    "large": ["--hidden", "384", "--seq-len", "256", "--global-batch", "8"],
    "xlarge": ["--hidden", "512", "--seq-len", "256", "--global-batch", "8"],
    "xxlarge": ["--hidden", "576", "--seq-len", "256", "--global-batch", "8"],
}


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = f"{REPO / 'python'}{os.pathsep}{REPO}"
    return e


def generate(root: Path, name: str) -> None:
    """Captures the pair with the example itself: the real capture path, real layouts. The
    quick pair (CI) is written directly: a TP4 split of 4 small tensors, in seconds."""
    if (root / "candidate" / "manifest.json").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    if name == "quick":
        from diff_memory import write_pair  # beside this script

        write_pair(root, tensors=4, elements=1 << 16, seed=1)
        return
    recipe = RECIPES[name]
    train = ["-m", "examples.gpt.train", *recipe]
    ref = [PY, *train, "--reference", "--perturbations", "2", "--out", str(root / "reference")]
    torchrun = str(Path(PY).with_name("torchrun"))
    cand = [torchrun, "--standalone", "--nproc-per-node", "4", *train, "--tp", "2", "--dp", "2"]
    for cmd in (ref, [*cand, "--out", str(root / "candidate")]):
        subprocess.run(cmd, cwd=REPO, env=env(), check=True, capture_output=True)


def bundle_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.h5"))


def drop_caches(root: Path) -> str:
    """Evicts the pair from the page cache: the kernel's drop_caches as root, else
    posix_fadvise(DONTNEED) per file. Returns which one worked."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return "drop_caches"
    except OSError:
        for f in bundle_files(root):
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        return "fadvise"


def timed(cmd: list[str], cpus: str | None = None) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB, stdout) of one run under /usr/bin/time, on `cpus` if given."""
    full = ["/usr/bin/time", "-f", "TTRACE_PEAK_KB %M", *cmd]
    if cpus:
        full = ["taskset", "-c", cpus, *full]
    start = time.perf_counter()
    r = subprocess.run(full, cwd=REPO, env=env(), capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    peak = re.search(r"TTRACE_PEAK_KB (\d+)", r.stderr)
    if r.returncode not in (0, 1) or not peak:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return seconds, int(peak.group(1)) / 1024, r.stdout


def floor_seconds(root: Path) -> float:
    out = subprocess.run(
        [str(BUILD / "bench/read_floor"), str(root / "reference"), str(root / "candidate")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[1])


def load() -> float:
    return os.getloadavg()[0]


def measure(root: Path, threads: str, repeat: int, numpy: bool) -> dict[str, float]:
    """Each timing is the fastest of `repeat` runs; cold runs each start from dropped caches.
    `ttrace diff` reuses what earlier runs learnt about unchanged rank files (the rank-file
    cache); "first" is a warm run with that cache off, as a pair's first diff."""
    ttrace = [str(BUILD / "bin/ttrace"), "diff", "--no-cache", "--quiet"]
    pair = [str(root / "reference"), str(root / "candidate")]
    json_out = root / "diff.json"
    m: dict[str, float] = {"gb": sum(f.stat().st_size for f in bundle_files(root)) / 1e9}
    m["load_start"] = load()
    floor_cold, diff_cold, floor_warm, diff_warm, first = [], [], [], [], []
    for _ in range(repeat):
        m["cold_how"] = drop_caches(root)  # type: ignore[assignment]
        floor_cold.append(floor_seconds(root))
        drop_caches(root)
        diff_cold.append(timed([*ttrace, *pair], threads)[0])
    floor_seconds(root)  # warm the cache
    for _ in range(repeat):
        floor_warm.append(floor_seconds(root))
        seconds, m["diff_mib"], _ = timed([*ttrace, "--json", str(json_out), *pair], threads)
        diff_warm.append(seconds)
        os.environ["TTRACE_NO_RANK_FILE_CACHE"] = "1"
        try:
            first.append(timed([*ttrace, *pair], threads)[0])
        finally:
            del os.environ["TTRACE_NO_RANK_FILE_CACHE"]
    m["floor_cold"], m["diff_cold"] = min(floor_cold), min(diff_cold)
    m["floor_warm"], m["diff_warm"], m["diff_first"] = min(floor_warm), min(diff_warm), min(first)
    m["diff_1t"], _, _ = timed([*ttrace, *pair], "0")
    m["numpy"], m["numpy_mib"], m["agree"] = float("nan"), float("nan"), 1.0
    if numpy:
        baseline = [PY, str(REPO / "bench/numpy_diff.py"), *pair, "--check", str(json_out)]
        m["numpy"], m["numpy_mib"], out = timed(baseline)
        m["agree"] = float("agreement with ttrace diff" in out and "disagree" not in out)
    m["load_end"] = load()
    return m


def print_table(rows: list[tuple[str, dict[str, float]]], repeat: int) -> None:
    head = (
        f"{'size':>7} {'GB':>6} {'floor w':>8} {'floor c':>8} {'diff w':>7} {'diff c':>7}"
        f" {'first w':>8} {'w/floor':>8} {'c/floor':>8} {'first/floor':>11} {'numpy/diff':>10}"
        f" {'1t/2t':>6} {'s/GB':>6} {'MiB/GB':>7} {'numpy s/GB':>10} {'agree':>6} {'load':>10}"
    )
    print(head)
    for name, m in rows:
        print(
            f"{name:>7} {m['gb']:>6.2f} {m['floor_warm']:>8.2f} {m['floor_cold']:>8.2f}"
            f" {m['diff_warm']:>7.2f} {m['diff_cold']:>7.2f} {m['diff_first']:>8.2f}"
            f" {m['diff_warm'] / m['floor_warm']:>8.2f} {m['diff_cold'] / m['floor_cold']:>8.2f}"
            f" {m['diff_first'] / m['floor_warm']:>11.2f} {m['numpy'] / m['diff_warm']:>10.2f}"
            f" {m['diff_1t'] / m['diff_warm']:>6.2f}"
            f" {m['diff_warm'] / m['gb']:>6.2f} {m['diff_mib'] / m['gb']:>7.0f}"
            f" {m['numpy'] / m['gb']:>10.2f} {'yes' if m['agree'] else 'NO':>6}"
            f" {m['load_start']:>4.1f}-{m['load_end']:<5.1f}"
        )
    print(f"cold cache by: {rows[0][1]['cold_how']}; fastest of {repeat}; w = warm, c = cold;")
    print("first = warm with the rank-file cache off (a pair's first diff); 1t/2t = one thread's")
    print("time over two threads'; numpy = bench/numpy_diff.py (checked against ttrace diff")
    print("--json; nan where not run); load = 1-minute load average at the start and end")


def main() -> None:
    global BUILD
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one tiny pair, for CI")
    parser.add_argument("--sizes", default="small,medium,large")
    parser.add_argument("--data", type=Path, default=None, help="where pairs are kept")
    parser.add_argument("--threads", default="0,1", help="CPUs of the multi-thread runs")
    parser.add_argument("--repeat", type=int, default=1, help="fastest of this many runs")
    parser.add_argument(
        "--numpy-sizes", default=None, help="sizes the numpy baseline runs at (default: all)"
    )
    parser.add_argument(
        "--build", type=Path, default=REPO / "build", help="the CMake build directory"
    )
    args = parser.parse_args()
    BUILD = args.build
    sizes = ["quick"] if args.quick else args.sizes.split(",")
    data = args.data or Path(tempfile.gettempdir()) / "ttrace-perf"
    if args.quick:
        data = Path(tempfile.mkdtemp(prefix="ttrace-perf-quick-"))
    rows = []
    try:
        for name in sizes:
            root = data / name
            generate(root, name)
            numpy = args.numpy_sizes is None or name in args.numpy_sizes.split(",")
            rows.append((name, measure(root, args.threads, args.repeat, numpy)))
            print(f"{name} measured", file=sys.stderr, flush=True)
        print_table(rows, args.repeat)
    finally:
        if args.quick:
            shutil.rmtree(data, ignore_errors=True)
    if not all(m["agree"] for _, m in rows):
        sys.exit("the numpy baseline disagrees with ttrace diff")


if __name__ == "__main__":
    main()
