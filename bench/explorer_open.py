"""The explorer's open against `ttrace diff`, side by side, for bundle pairs of a few sizes.

Each pair is a real capture of the example GPT (fp32, TP2xDP2 with sequence parallelism,
2 iterations; the reference with 2 perturbed variants), made bigger by the hidden size and
sequence length. Every open runs in a fresh process (`build/bench/explorer_open` drives the
real MainWindow offscreen), as a user reopening the explorer would; the page cache is warm.

Columns: time to the layer tree and to all statistics on a first open (empty summary cache);
on a reopen, the time until the cached comparison is shown (found from the bundles' file
stamps) and until it is checked against their bytes; the explorer's headless
`--markdown` run (empty cache), the engine alone inside a process with a QApplication (no
window; what the GUI process costs apart from the GUI), and `ttrace diff --no-cache` and cached.
The opens and the engine alone are timed inside their process (from the open, after the
application exists); the headless run and the diffs are process wall times.
Targets (issue: "the explorer opens instantly"): tree <= 1 s, statistics no slower than
`ttrace diff`, cached reopen <= 0.5 s.

usage: python bench/explorer_open.py [--quick] [--sizes small,medium] [--repeat N] [--out DIR]
                                    [--pair DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from zoo_lib import REPO, TTRACE, run_train

BENCH = REPO / "build" / "bench" / "explorer_open"
EXPLORER = TTRACE.with_name("ttrace-explorer")

# Pair recipes (hidden size, sequence length), kept small enough for a 2-core machine.
RECIPES: dict[str, tuple[int, int]] = {
    "tiny": (32, 16),
    "small": (96, 32),
    "medium": (192, 64),
}


def make_pair(root: Path, hidden: int, seq: int) -> int:
    """Reference and TP2xDP2 candidate; returns their size in bytes."""
    if not (root / "cand" / "manifest.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        shape = ("--hidden", str(hidden), "--seq-len", str(seq))
        run_train(root / "ref", 1, "--reference", "--perturbations", "2", *shape)
        run_train(root / "cand", 4, "--tp", "2", "--dp", "2", *shape)
    return sum(f.stat().st_size for f in root.rglob("*.h5"))


def run_env(cache: Path) -> dict[str, str]:
    return dict(os.environ, XDG_CACHE_HOME=str(cache), QT_QPA_PLATFORM="offscreen")


def open_once(ref: str, cand: str, cache: Path) -> list[float]:
    """tree_s, shown_s, stats_s of one open in a fresh process."""
    out = subprocess.run(
        [str(BENCH), ref, cand],
        capture_output=True,
        text=True,
        check=True,
        env=run_env(cache),
    )
    tree, shown, stats, ok = out.stdout.split()
    if ok != "1":
        raise RuntimeError(f"the explorer did not load {cand}: {out.stderr[-2000:]}")
    return [float(tree), float(shown), float(stats)]


def wall(cmd: list[str], cache: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False, env=run_env(cache))
    return time.perf_counter() - start


def measure(ref: str, cand: str, scratch: Path) -> dict[str, float]:
    cache, empty = scratch / "cache", scratch / "empty"
    for d in (cache, empty):
        shutil.rmtree(d, ignore_errors=True)
    wall([str(TTRACE), "diff", "--quiet", "--no-cache", ref, cand], empty)  # warms the pages
    engine = float(
        subprocess.run(
            [str(BENCH), "--engine", ref, cand],
            capture_output=True,
            text=True,
            check=True,
            env=run_env(empty),
        ).stdout
    )
    tree, _, stats = open_once(ref, cand, cache)
    _, shown, checked = open_once(ref, cand, cache)
    md = wall([str(EXPLORER), "--markdown", str(scratch / "report.md"), ref, cand], empty)
    diff = wall([str(TTRACE), "diff", "--quiet", "--no-cache", ref, cand], empty)
    cached = wall([str(TTRACE), "diff", "--quiet", ref, cand], cache)
    shutil.rmtree(empty, ignore_errors=True)
    return dict(
        engine=engine,
        tree=tree,
        stats=stats,
        shown=shown,
        checked=checked,
        md=md,
        diff=diff,
        cached=cached,
    )


def median_runs(ref: Path, cand: Path, scratch: Path, repeat: int) -> dict[str, float]:
    runs = [measure(str(ref), str(cand), scratch) for _ in range(repeat)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one tiny pair (CI, no targets)")
    parser.add_argument("--sizes", default="small,medium", help=f"of {', '.join(RECIPES)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per pair (median shown)")
    parser.add_argument("--out", type=Path, default=None, help="keep the pairs here")
    parser.add_argument(
        "--pair",
        type=Path,
        action="append",
        default=[],
        help="also an existing pair DIR (DIR/reference, DIR/candidate: perf_table.py's pairs)",
    )
    args = parser.parse_args()
    sizes = ["tiny"] if args.quick else [s for s in args.sizes.split(",") if s]
    out = args.out or Path(tempfile.mkdtemp(prefix="ttrace-explorer-open-"))
    print(
        f"{'pair':>7} {'MB':>7} {'tree s':>7} {'stats s':>8} {'reopen shown s':>15} "
        f"{'reopen checked s':>17} {'headless md s':>14} {'engine in GUI process s':>24} "
        f"{'diff s':>7} {'diff cached s':>14} {'stats/diff':>10} {'md/diff':>8}"
    )
    pairs = []
    for name in sizes:
        size = make_pair(out / name, *RECIPES[name])
        pairs.append((name, out / name / "ref", out / name / "cand", size))
    for given in args.pair:
        size = sum(f.stat().st_size for f in given.rglob("*.h5"))
        pairs.append((given.name, given / "reference", given / "candidate", size))
    for name, ref, cand, size in pairs:
        m = median_runs(ref, cand, out / f"{name}-scratch", args.repeat)
        print(
            f"{name:>7} {size / 1e6:>7.1f} {m['tree']:>7.3f} {m['stats']:>8.3f} "
            f"{m['shown']:>15.3f} {m['checked']:>17.3f} {m['md']:>14.3f} {m['engine']:>24.3f} "
            f"{m['diff']:>7.3f} {m['cached']:>14.3f} {m['stats'] / m['diff']:>10.2f} "
            f"{m['md'] / m['diff']:>8.2f}",
            flush=True,
        )
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
