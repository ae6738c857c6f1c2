"""Every table of docs/performance.md in one command: the diff against its floors
(perf_table.py), the explorer's open (explorer_open.py) and the capture's overhead
(capture_overhead.py), run one after another on this machine and printed under one heading each.

Each part keeps its own options and its own explanation of the columns (see each script);
this command only runs them in one go, so that a table is measured on one machine in one
sitting. `--quick` runs each part's CI-sized variant (tiny bundles, no targets asserted).

usage: python bench/performance_report.py [--quick] [--build DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


def parts(quick: bool, build: Path) -> list[tuple[str, list[str]]]:
    """The three measurements, each a heading and the command that prints its table."""
    q = ["--quick"] if quick else []
    return [
        ("ttrace diff against its floors", ["perf_table.py", *q, "--build", str(build)]),
        ("The explorer's open", ["explorer_open.py", *q]),
        ("Capture overhead (traced over untraced step)", ["capture_overhead.py", *q]),
    ]


def run_part(title: str, argv: list[str]) -> int:
    print(f"\n## {title}\n", flush=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "python"), str(REPO), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    start = time.perf_counter()
    code = subprocess.run([sys.executable, str(BENCH / argv[0]), *argv[1:]], env=env).returncode
    print(f"\n({argv[0]}: {time.perf_counter() - start:.0f} s, exit {code})", flush=True)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each part's CI-sized variant")
    parser.add_argument("--build", type=Path, default=REPO / "build", help="the CMake build")
    args = parser.parse_args()
    print(f"# Performance report ({os.cpu_count()} CPUs, {'quick' if args.quick else 'full'})")
    failed = [argv[0] for title, argv in parts(args.quick, args.build) if run_part(title, argv)]
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
