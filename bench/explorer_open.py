"""The explorer's open against `ttrace diff`, side by side, for bundle pairs of a few sizes.

Each pair is a real capture of the example GPT (fp32, TP2xDP2 with sequence parallelism,
2 iterations; the reference with 2 perturbed variants), made bigger by the hidden size.
`build/bench/explorer_open` drives the real MainWindow offscreen and prints the time to the
layer tree, to all statistics, a cached reopen, and `ttrace diff` uncached and cached.
Targets (issue: "the explorer opens instantly"): tree <= 1 s, statistics no slower than
`ttrace diff`, cached reopen <= 0.5 s.

usage: python bench/explorer_open.py [--quick] [--hidden 64,256,512] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from zoo_lib import REPO, TTRACE, run_train

BENCH = REPO / "build" / "bench" / "explorer_open"


def make_pair(root: Path, hidden: int) -> int:
    """Reference and TP2xDP2 candidate at `hidden`; returns their size in bytes."""
    shape = ("--hidden", str(hidden), "--seq-len", "32")
    run_train(root / "ref", 1, "--reference", "--perturbations", "2", *shape)
    run_train(root / "cand", 4, "--tp", "2", "--dp", "2", *shape)
    return sum(f.stat().st_size for f in root.rglob("*.h5"))


def measure(root: Path) -> list[float]:
    cache = root / "xdg-cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), QT_QPA_PLATFORM="offscreen")
    out = subprocess.run(
        [str(BENCH), str(TTRACE), str(root / "ref"), str(root / "cand")],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return [float(x) for x in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one tiny pair (CI, no targets)")
    parser.add_argument("--hidden", default="64,256,512", help="hidden sizes, comma-separated")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    sizes = [32] if args.quick else [int(h) for h in args.hidden.split(",")]
    out = args.out or Path(tempfile.mkdtemp(prefix="ttrace-explorer-open-"))
    print(
        f"{'hidden':>6} {'MB':>8} {'tree s':>7} {'stats s':>8} {'reopen s':>9} "
        f"{'diff s':>7} {'diff cached s':>14} {'stats/diff':>10}"
    )
    for hidden in sizes:
        root = out / f"h{hidden}"
        shutil.rmtree(root, ignore_errors=True)
        size = make_pair(root, hidden)
        tree, stats, reopen, diff, cached = measure(root)
        print(
            f"{hidden:>6} {size / 1e6:>8.1f} {tree:>7.3f} {stats:>8.3f} {reopen:>9.3f} "
            f"{diff:>7.3f} {cached:>14.3f} {stats / diff:>10.2f}",
            flush=True,
        )
        shutil.rmtree(root, ignore_errors=True)
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
