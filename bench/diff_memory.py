"""Peak memory of `ttrace diff` against bundle size: the engine streams tensors, so memory
must track the largest tensor, not the bundle. Two bundle pairs with the same tensor size and
8x the tensor count are diffed side by side in one run; the ratio of their peak RSS is the
number to watch (about 1 when streaming works, about 8 when the engine holds the bundle).

usage: python bench/diff_memory.py [--tensors N] [--elements M] [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from ttrace.bundle import BundleWriter, Placement, TensorKey, write_manifest

REPO = Path(__file__).resolve().parents[1]


def write_pair(root: Path, tensors: int, elements: int, seed: int) -> int:
    """A 1-rank reference (with 2 perturbed variants) and a 4-rank TP4 candidate of `tensors`
    fp32 tensors of `elements` each; the candidate differs by round-off-sized noise."""
    rng = np.random.default_rng(seed)
    cols = 256
    rows = elements // cols
    modules = [
        {"name": f"layers.{i}", "order": i, "depth": i + 1, "type": "Linear"}
        for i in range(tensors)
    ]
    variants = ["nominal", "perturbed-1", "perturbed-2"]
    ref = BundleWriter(root / "reference", rank=0, world_size=1, role="reference")
    cands = [
        BundleWriter(root / "candidate", rank=r, world_size=4, role="candidate", coords={"tp": r})
        for r in range(4)
    ]
    eps = np.finfo(np.float32).eps
    for i in range(tensors):
        full = rng.standard_normal((rows, cols)).astype(np.float32)
        for v, name in enumerate(variants):
            noise = 0 if v == 0 else eps * rng.uniform(-1, 1, full.shape)
            key = TensorKey(name, 0, 0, f"layers.{i}", "forward_output", "0")
            ref.write(key, (full * (1 + noise)).astype(np.float32))
        cand = (full * (1 + 0.5 * eps * rng.uniform(-1, 1, full.shape))).astype(np.float32)
        for r, w in enumerate(cands):
            part = Placement.split((rows, cols), 1, r, 4)
            key = TensorKey("nominal", 0, 0, f"layers.{i}", "forward_output", "0")
            w.write(key, cand[:, r * cols // 4 : (r + 1) * cols // 4], part)
    common = dict(precision="fp32", modules=modules, iterations=[0], micro_batches=1)
    write_manifest(
        root / "reference",
        role="reference",
        world_size=1,
        parallel={},
        variants=variants,
        ranks=[ref.close()],
        **common,
    )
    write_manifest(
        root / "candidate",
        role="candidate",
        world_size=4,
        parallel={"tp": 4},
        variants=["nominal"],
        ranks=[w.close() for w in cands],
        **common,
    )
    return sum(f.stat().st_size for f in root.rglob("*.h5"))


def peak_rss_mib(root: Path) -> tuple[float, float, int]:
    """Runs `ttrace diff` without its cache under /usr/bin/time; (peak MiB, seconds, exit)."""
    start = time.perf_counter()
    result = subprocess.run(
        [
            "/usr/bin/time",
            "-v",
            str(REPO / "build/bin/ttrace"),
            "diff",
            "--no-cache",
            str(root / "reference"),
            str(root / "candidate"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)
    if not match:
        raise RuntimeError(f"no RSS in /usr/bin/time output:\n{result.stderr[-2000:]}")
    return int(match.group(1)) / 1024, seconds, result.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=8, help="tensors in the small pair")
    parser.add_argument("--elements", type=int, default=1 << 20, help="elements per tensor")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="ttrace-diff-memory-"))
    rows = []
    for count in (args.tensors, args.tensors * 8):
        root = out / f"n{count}"
        shutil.rmtree(root, ignore_errors=True)
        size = write_pair(root, count, args.elements, seed=count)
        mib, seconds, code = peak_rss_mib(root)
        rows.append((count, size / 2**20, mib, seconds, code))
    print(
        f"ttrace diff peak memory, tensors of {args.elements} fp32 elements "
        f"({args.elements * 4 / 2**20:.0f} MiB each)"
    )
    print(f"{'tensors':>8} {'bundles MiB':>12} {'peak RSS MiB':>13} {'seconds':>8} {'exit':>5}")
    for count, size, mib, seconds, code in rows:
        print(f"{count:>8} {size:>12.0f} {mib:>13.0f} {seconds:>8.2f} {code:>5}")
    print(
        f"bundle size ratio {rows[1][1] / rows[0][1]:.1f}x, "
        f"peak memory ratio {rows[1][2] / rows[0][2]:.2f}x"
    )
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
